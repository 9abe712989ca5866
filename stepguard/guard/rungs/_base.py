"""What a rung is, and the registry that names them: the rungs of the core, then those of plugins found by entry point."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, TypeVar

from stepguard.evaluator import Number
from stepguard.procedure import Procedure

if TYPE_CHECKING:
    from stepguard.guard import GuardConfig  # the public face: no cycle with _config, which reads the registry

__all__ = ["ENTRY_POINT_GROUP", "Read", "Rung", "RungPluginWarning", "get_rung", "load_rung_plugins", "register", "rung_names",
           "rung_origin"]


@dataclass(frozen=True)
class Read:
    """A derived step's value read by position from the model's verified sub-step values (:meth:`Rung.read`).

    Attributes:
        value: the value text read (``696``, ``-77.9``), which the parent step then checks like any reply.
        record: every sub-step line the model wrote and verified, and the digits read from each in
            place order (the result's ``read`` event holds it).
    """

    value: str
    record: str


class Rung:
    """One rung of the re-prompt ladder: how the guard re-asks a failing step.

    Subclass it, decorate the class with :func:`register`, and name the module that holds it in an
    entry point of the group :data:`ENTRY_POINT_GROUP` (docs/policies.md, "Writing a rung"); the
    controller reads only these attributes and never switches on rung names.

    Attributes:
        name: the name used in ``GuardConfig.ladder``, ``--ladder``, results and spans.
        whole_chunk: re-ask the chunk from the failing step (True), or the failing step alone.
        resamples: sample at ``GuardConfig.resample_temperature`` with the seed ``seed + attempt``,
            so a repeated rung never resends the same request.
        derives: the rung re-asks the step as a derived sub-procedure (:meth:`derive`) that runs
            under a nested guard (:meth:`nested_config`).
        nested_ladder: the nested guard's ladder (derived rungs).
        nested_tries: the nested guard's re-prompts per sub-step (derived rungs).
        one_at_a_time: the nested guard asks a sub-step alone with the values it reads written
            into its line (``t3 = 0.05 if False else 0``; :attr:`GuardConfig.inline_known`): one a
            call, or, where the run follows the model with sub-steps together (``follow`` and
            ``substeps_together``), in windows that follow the model, each sub-step that deviates
            then asked alone so. The rungs over production expressions (``chain``, ``choice``, ``tie``,
            and ``split`` and ``single`` that reach them) ask so, because the embedded model reads a
            literal better alone than in a chunk (figures: docs/lab/production-suite-history.md).
            The integer rungs of the benchmark keep whole-chunk asking.
    """

    name: str = ""
    whole_chunk: bool = False
    resamples: bool = False
    derives: bool = False
    nested_ladder: tuple[str, ...] = ("narrow", "resample")
    nested_tries: int = 2
    one_at_a_time: bool = False
    applies_to: str = ""
    """The one form a derived rung re-asks, for its refusal (``an integer sum or difference of two
    operands``); empty for a rung that composes others and says its own (:meth:`refusal`)."""

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """The sub-procedure that computes step ``index`` (0-based) from the committed values ``env``.

        Returns:
            A procedure with no inputs whose last step has the failing step's variable (every
            sub-step is checked by the evaluator; names and values are the guard's own, derived
            from the expression, so no expected value is shown), or ``None`` where the rung does
            not apply; then the ladder asks the step alone (``narrow``, later ``resample``).
        """
        return None

    def refusal(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> str:
        """Why :meth:`derive` returns ``None`` for step ``index`` over ``env``, named: the form the rung
        re-asks (:attr:`applies_to`) and the step's (``re-asks an integer sum or difference of two
        operands only, not a sum with a decimal operand``); a rung that composes others says which
        refused what.
        Only meaningful where :meth:`derive` returned ``None``."""
        if not self.derives:
            return "asks the step as it is (derives no sub-steps)"
        from stepguard.guard.rungs._form import form_of

        form, wanted = form_of(procedure, index, env), self.applies_to or "another form"
        head = form.split(" with ")[0].removeprefix("an integer ").removeprefix("a ").removeprefix("an ")
        if head and head in wanted:  # of the rung's form, short of a condition: "an integer sum" that does not carry
            return f"re-asks {wanted} only, and this step, {form}, is not one"
        return f"re-asks {wanted} only, not {form}"

    def read(self, procedure: Procedure, index: int, env: Mapping[str, Number | str], texts: Mapping[str, str | None]) -> Read | None:
        """The step's value read by position from the verified sub-step values ``texts`` (``{var: value text}``)
        of :meth:`derive`'s sub-procedure, for a rung whose sub-procedure does not end in the step's
        variable (the digit rungs: :mod:`stepguard.guard.rungs.arith.digits`); ``None`` (the default): the
        sub-procedure's last step is the step's value, as the model wrote it.
        """
        return None

    def nested_config(self, parent: GuardConfig, attempt: int, tokens_left: int | None, wall_left: float | None,
                      sub: Procedure | None = None) -> GuardConfig:
        """The nested guard's configuration for this rung's derived sub-procedure ``sub`` (what
        :meth:`derive` returned; a rung that derives more than one form reads which from it).

        Its ``on_exhausted`` is ``raise``: a derived run stops at its first sub-step no try
        verified, since every later sub-step reads that value and the parent takes only a verified
        result: flagging and going on spends calls for nothing (figures: docs/lab/production-suite-history.md).

        It follows the model only where the rung asks sub-steps alone (``one_at_a_time``) and the
        parent follows it with sub-steps together (``follow`` and ``substeps_together``, every run's
        default): a window of sub-steps, cut at the first that deviates, which is then asked alone
        through :attr:`nested_ladder`. Otherwise it is not streamed (a plain streamed parent's
        re-asks use the chunking of chunked mode, docs/policies.md, "Streamed mode") and asks one
        sub-step a call, or a digit rung's sheet by its own chunking. No call, window or chunk asks a
        sub-step with one whose value its literals, or whether it is asked at all, were written from
        (:meth:`~stepguard.procedure.Procedure.after`: a digit sheet's carries, the branch a ``chain``
        condition took), so no call shows the model a value it is about to write.

        Args:
            parent: the run's configuration.
            attempt: the parent step's re-prompt number (moves the seed: no request is resent).
            tokens_left: the parent's token budget left (``None``: unbounded).
            wall_left: the parent's wall-clock seconds left (``None``: unbounded).
            sub: the derived sub-procedure (``None`` where the caller does not give it).
        """
        follows = self.one_at_a_time and parent.follow and parent.substeps_together
        return replace(
            parent, chunk_size=1 if self.one_at_a_time else 64, inline_known=self.one_at_a_time,
            adaptive=False, ladder=self.nested_ladder, max_reprompts_per_step=self.nested_tries,
            policy="reprompt", on_exhausted="raise", seed=parent.seed + attempt, streamed=False, follow=follows,
            max_total_tokens=None if tokens_left is None else max(1, tokens_left),
            max_wall_s=None if wall_left is None else max(1e-3, wall_left),
        )

    def __repr__(self) -> str:
        return f"<rung {self.name}>"


ENTRY_POINT_GROUP = "stepguard.rungs"
"""The entry point group a distribution names its rung modules in (``pyproject.toml``:
``[project.entry-points."stepguard.rungs"]``, ``name = "package.module"``); importing the module
registers its rungs (:func:`register`). stepguard's own arithmetic rungs are found so too."""


class RungPluginWarning(UserWarning):
    """A rung plugin's entry point failed to load (it raised, or registered a name taken); its rungs
    are not available, and every other rung is."""


_REGISTRY: dict[str, Rung] = {}
_ORIGIN: dict[str, str] = {}
_FAILED: dict[str, str] = {}
"""Entry point (``name = value``) -> why it failed to load, for the unknown-rung message."""
_LOAD: dict[str, Any] = {"core": False, "done": False, "loading": None}
"""``core``: the core's own rungs are registered; ``done``: the plugins were looked for (once a process);
``loading``: the entry point being loaded (the origin its registrations record)."""
R = TypeVar("R", bound=type[Rung])


def register(cls: R) -> R:
    """Class decorator: make the rung available by its ``name`` in every ladder.

    The plugins are loaded first (:func:`load_rung_plugins`), so a name a plugin holds is taken.

    Raises:
        ValueError: the class has no name, or another rung has that name.
    """
    if _LOAD["core"] and _LOAD["loading"] is None:
        load_rung_plugins()
    if not cls.name or cls.name in _REGISTRY:
        taken = f"taken (by {_ORIGIN[cls.name]})" if cls.name in _REGISTRY else "empty"
        raise ValueError(f"a rung needs a unique name; {cls.name!r} is {taken}")
    _REGISTRY[cls.name] = cls()
    _ORIGIN[cls.name] = _LOAD["loading"] or cls.__module__
    return cls


def _core_registered() -> None:
    """Called once the core's own rungs are registered: from then on a registration loads the plugins first."""
    _LOAD["core"] = True


def _said(ep: EntryPoint) -> str:
    """An entry point as messages name it: ``arith = stepguard.guard.rungs.arith (distribution stepguard)``."""
    dist = getattr(ep, "dist", None)
    return f"{ep.name} = {ep.value}" + (f" (distribution {dist.name})" if dist is not None else "")


OWN_PLUGIN = "stepguard.guard.rungs.arith"
"""The module stepguard's own entry point names (its arithmetic rungs)."""


def _plugins() -> list[EntryPoint]:
    """The group's entry points: stepguard's own first, then by distribution and name (a fixed order).

    Where no entry point names :data:`OWN_PLUGIN` (stepguard run from a source tree with no
    installed metadata, or an editable install made before the entry point existed), it is loaded
    as if one did, with no distribution named: the default ladders need its rungs.
    """
    def key(ep: EntryPoint) -> tuple[bool, str, str]:
        dist = getattr(ep, "dist", None)
        name = dist.name if dist is not None else ""
        return (ep.value != OWN_PLUGIN, name, ep.name)
    found = list(entry_points(group=ENTRY_POINT_GROUP))
    if not any(ep.value == OWN_PLUGIN for ep in found):
        found.append(EntryPoint("arith", OWN_PLUGIN, ENTRY_POINT_GROUP))
    return sorted(found, key=key)


def load_rung_plugins() -> None:
    """Import every module named in the entry point group :data:`ENTRY_POINT_GROUP`, once a process.

    Lookups (:func:`get_rung`, :func:`rung_names`) and registrations call it; a caller needs it
    only to see a plugin's failure early. A plugin that raises while loading, or registers a name
    another rung holds, is skipped with a :class:`RungPluginWarning` naming its entry point and
    the error; the rungs of the others, and of the core, stay available.
    """
    if _LOAD["done"]:
        return
    _LOAD["done"] = True
    for ep in _plugins():
        _LOAD["loading"] = f"entry point {_said(ep)}"
        try:
            ep.load()
        except Exception as exc:  # noqa: BLE001 - a plugin may raise anything; it must not break stepguard
            _FAILED[_said(ep)] = f"{type(exc).__name__}: {exc}"
            warnings.warn(RungPluginWarning(
                f"the rung plugin {_said(ep)} (entry point group {ENTRY_POINT_GROUP!r}) failed to load, so its rungs "
                f"are not available: {type(exc).__name__}: {exc}"), stacklevel=3)
        finally:
            _LOAD["loading"] = None


def get_rung(name: str) -> Rung:
    """The registered rung called ``name``.

    Raises:
        KeyError: no rung has that name (the message lists those that exist, and any plugin that failed to load).
    """
    load_rung_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        failed = "".join(f"; the rung plugin {ep} failed to load ({why})" for ep, why in _FAILED.items())
        raise KeyError(f"unknown ladder rung {name!r}: use one of {', '.join(rung_names())}{failed}") from None


def rung_names() -> tuple[str, ...]:
    """Every registered rung's name, in registration order: the core's, then each plugin's (:func:`load_rung_plugins`)."""
    load_rung_plugins()
    return tuple(_REGISTRY)


def rung_origin(name: str) -> str:
    """Where the rung ``name`` came from: its module for a rung of the core or one registered by an
    import, ``entry point <name> = <module> (distribution <dist>)`` for a plugin's.

    Raises:
        KeyError: no rung has that name.
    """
    get_rung(name)
    return _ORIGIN[name]


def __getattr__(name: str) -> Any:
    """``SUB_STEP_LADDER`` moved to the arithmetic plugin (:mod:`stepguard.guard.rungs.arith`); read
    from there for imports written before the move."""
    if name == "SUB_STEP_LADDER":
        from stepguard.guard.rungs.arith import SUB_STEP_LADDER

        return SUB_STEP_LADDER
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
