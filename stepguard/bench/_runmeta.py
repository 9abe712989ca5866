"""What run.json records about a run: the model, the generation settings, the instances file."""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepguard.model import ChatModel

if TYPE_CHECKING:
    from stepguard.bench.instances import Instance
    from stepguard.bench.suites import ProcedureCase
    from stepguard.guard import GuardConfig

__all__ = ["MAX_RETRIES", "RAW_SEED", "RAW_TEMPERATURE", "RAW_TOKENS_PER_STEP", "describe_model", "instance_source", "run_meta"]

RAW_TEMPERATURE, RAW_SEED = 0.0, 0
"""Raw-mode sampling: greedy, fixed seed (benchmark.md, "Raw mode")."""

MAX_RETRIES = 3
"""Re-ask mode's Instructor ``max_retries`` (:mod:`stepguard.bench.reask`): re-asks after the first
attempt (Instructor 1.17 counts so: at most four calls in all)."""

RAW_TOKENS_PER_STEP = 40
"""Raw-mode token allowance per step (*ours*). Measured here: Qwen2.5-Coder-1.5B answers the raw
prompt in markdown, three lines a step, 35-37 tokens a step; at 24 it was cut before its final answer
on a 5-step procedure, at 32 on a 23-step one. (The embedded llama.cpp server shrinks ``max_tokens``
to what its context window has left; endpoints that refuse instead need a large enough window.)"""


def describe_model(model: ChatModel) -> dict[str, Any]:
    """What run.json records about a model: ``{spec, name, provider, simulated, seed?, server?}``.

    ``server`` holds the embedded server's settings (model file, alias, context, threads, seed,
    prompt-lookup draft tokens, extra arguments, runtime, and the native runtime's binary and its sha256)
    when the model exposes a ``server`` attribute (:class:`stepguard.adapters.LocalModel`).
    """
    out: dict[str, Any] = {
        "spec": getattr(model, "spec", type(model).__name__),
        "name": getattr(model, "model_name", None),
        "provider": getattr(model, "provider", None),
        "simulated": bool(getattr(model, "simulated", False)),
    }
    if (seed := getattr(model, "seed", None)) is not None:
        out["seed"] = seed
    server = getattr(model, "server", None)
    if server is not None:
        keys = ("model_path", "alias", "n_ctx", "n_threads", "seed", "draft_tokens", "extra_args", "runtime", "binary", "binary_sha256",
                "parallel")
        out["server"] = {k: (str(v) if isinstance(v, Path) else v) for k in keys if (v := getattr(server, k, None)) is not None}
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _guard_config_dict(cfg: GuardConfig) -> dict[str, Any]:
    from stepguard.guard import ADDED_AFTER_STORES  # settings a stored run.json lacks at their defaults

    out: dict[str, Any] = json.loads(json.dumps(asdict(cfg), default=str))
    return {k: v for k, v in out.items() if k not in ADDED_AFTER_STORES or ADDED_AFTER_STORES[k] != v}


def instance_source(instances: str | Path | Iterable[Instance | ProcedureCase]) -> tuple[Any, dict[str, Any]]:
    """A re-iterable source of instances and its run.json entry ``{file, sha256}``.

    ``instances`` may be an instances JSONL file, a suite (a procedure file with its input sets,
    or a folder of them: :mod:`stepguard.bench.suites`; the sha256 is then over every file it
    reads), or a sequence or iterable of instances or :class:`~stepguard.bench.suites.ProcedureCase`.

    Returns:
        ``(make, meta)``: ``make()`` returns a fresh iterator over the instances (a file is
        streamed again each time; a one-shot iterator can be walked once), ``meta`` is
        ``{"file": absolute path or None, "sha256": of the file's bytes, of the sequence's JSON, or None,
        "answer_not_last": a case's procedure answers with another step than its last, "raw_prompt":
        {prompt file name: sha256} of the cases' prompt files, absent or ``None`` where none has one}``.

    Raises:
        ProcedureError: a suite without input sets, or with an invalid file (names the file).
    """
    if isinstance(instances, (str, Path)):
        from stepguard.bench.instances import iter_instances
        from stepguard.bench.suites import is_suite, load_suite, suite_sha256

        path = Path(instances)
        if is_suite(path):  # procedure files with input sets: a few hundred cases at most, held in memory
            cases = load_suite(path)
            return (lambda: iter(cases)), {"file": str(path.resolve()), "sha256": suite_sha256(path),
                                           "answer_not_last": _answer_not_last(cases), "raw_prompt": _raw_prompts(cases),
                                           "raw_max_tokens": raw_max_tokens_sent(cases)}
        return (lambda: iter_instances(path)), {"file": str(path.resolve()), "sha256": _sha256(path), "answer_not_last": False}
    if isinstance(instances, Sequence):  # not a str here: a str is a path, above
        h = hashlib.sha256()
        models: Sequence[Any] = instances  # Instances or ProcedureCases: pydantic models
        for inst in models:
            h.update(inst.model_dump_json().encode("utf-8") + b"\n")
        return (lambda: iter(instances)), {"file": None, "sha256": h.hexdigest(), "answer_not_last": _answer_not_last(instances),
                                           "raw_prompt": _raw_prompts(instances), "raw_max_tokens": raw_max_tokens_sent(instances)}
    once = iter(instances)
    return (lambda: once), {"file": None, "sha256": None, "answer_not_last": False}


def _raw_prompts(items: Iterable[Any]) -> dict[str, str] | None:
    """``{prompt file name: sha256}`` of the cases' prompt files, or ``None`` (none has one)."""
    from stepguard.bench.suites import ProcedureCase, raw_prompt_digests

    return raw_prompt_digests([i for i in items if isinstance(i, ProcedureCase)])


def raw_max_tokens_sent(items: Iterable[Any]) -> dict[str, Any] | None:
    """What raw mode sends as ``max_tokens`` where prompt files set it, or ``None`` (none does).

    Returns:
        ``{"every": True, "value": N}`` where every case's prompt file sets the same ``N``; else
        ``{"every": False, "by_prompt": {prompt file name: N}}`` (the other cases get the per-step allowance).
    """
    cases = list(items)
    caps = {c.raw_prompt.path.name: c.raw_prompt.max_tokens for c in cases
            if getattr(c, "raw_prompt", None) is not None and c.raw_prompt.max_tokens is not None}
    if not caps:
        return None
    every = all(getattr(c, "raw_prompt", None) is not None and c.raw_prompt.max_tokens is not None for c in cases)
    if every and len(set(caps.values())) == 1:
        return {"every": True, "value": next(iter(caps.values()))}
    return {"every": False, "by_prompt": dict(sorted(caps.items()))}


def _answer_not_last(items: Iterable[Any]) -> bool:
    """Does any case's procedure answer with another step than its last (a generated instance never does)?"""
    from stepguard.bench._raw import answer_not_last

    return any(answer_not_last(i.procedure) for i in items if hasattr(i, "procedure"))


def run_meta(mode: str, model: ChatModel, guard_config: GuardConfig | None, inst_meta: dict[str, Any],
             raw_tokens_per_step: int = RAW_TOKENS_PER_STEP) -> dict[str, Any]:
    """The run.json of a new run (``model``, ``mode``, ``guard_config``, ``generation``,
    ``instances_sha256`` and ``prompts_sha256``, the templates' text, are its identity: see
    :data:`stepguard.bench.store.IDENTITY_KEYS`; ``prompt_forms``, the forms version a guarded run
    asks in, is in ``prompts_sha256`` and recorded to name it when a store is refused).

    Args:
        mode: ``"raw"``, ``"guarded"`` or ``"reask"``.
        model: the model; described by :func:`describe_model`.
        guard_config: guarded mode's config (``None`` in raw mode).
        inst_meta: ``{file, sha256, answer_not_last}`` from :func:`instance_source` (raw mode: where
            ``answer_not_last``, ``generation`` records ``final_answer``, as that prompt is worded
            otherwise than before and a run made with the old wording is another run).
        raw_tokens_per_step: raw mode's ``max_tokens`` allowance per step. Where prompt files set
            their own ``max_tokens`` (``inst_meta["raw_max_tokens"]``), ``generation`` records what was
            sent: the number where every case's prompt file sets the same one, else the allowance and
            ``max_tokens_by_prompt``.

    In raw mode ``raw_prompt`` is ``inst_meta``'s (the prompt files sent instead of stepguard's
    prompt, by sha256; ``None``: stepguard's prompt throughout), an identity key: a raw run is not
    resumed with other messages. Guarded mode reads no prompt file: ``None``.
    """
    import stepguard

    seed = RAW_SEED
    if mode == "raw":
        generation: dict[str, Any] = {"temperature": RAW_TEMPERATURE, "seed": RAW_SEED, "max_tokens": f"{raw_tokens_per_step}*n_steps+64"}
        sent = inst_meta.get("raw_max_tokens")  # prompt files' own max_tokens: what was sent for their cases
        if sent is not None and sent["every"]:
            generation["max_tokens"] = sent["value"]
        elif sent is not None:
            generation["max_tokens_by_prompt"] = sent["by_prompt"]
        if inst_meta.get("answer_not_last"):  # the prompt names the answer variable (stepguard.bench._raw): another run
            generation["final_answer"] = "the answer variable's value, after the last step"
    elif mode == "reask":
        generation = {"temperature": RAW_TEMPERATURE, "seed": RAW_SEED, "max_tokens": f"{raw_tokens_per_step}*n_steps+64",
                      "instructor": {"mode": "md_json", "max_retries": MAX_RETRIES}}
    else:
        assert guard_config is not None
        seed = guard_config.seed
        generation = {"temperature": guard_config.temperature, "seed": guard_config.seed,
                      "max_tokens": f"{guard_config.max_tokens_per_step}*chunk_steps+32"}
    from stepguard.guard import PromptSet

    info = describe_model(model)
    server = info.pop("server", None)
    identity: dict[str, Any] = {k: info[k] for k in ("spec", "name", "seed") if k in info}
    if server and server.get("runtime", "python") != "python":
        # another runtime is another llama.cpp build: temperature-0 replies differ (docs/speed.md),
        # so a run is not resumed on the other one, nor on another llama-server build; the default
        # runtime is left out, as in runs recorded before runtimes existed
        identity["runtime"] = server["runtime"]
        identity["binary_sha256"] = server.get("binary_sha256")
        if server.get("parallel", 1) > 1:  # batched decoding can flip a near-tie: another run
            identity["parallel"] = server["parallel"]
    return {
        "format": 1, "mode": mode, "model": identity, "model_info": info, "simulated": info["simulated"],
        "server": server, "guard_config": _guard_config_dict(guard_config) if guard_config else None,
        "generation": generation, "seed": seed, "raw_prompt": inst_meta.get("raw_prompt") if mode == "raw" else None,
        "instances": inst_meta["file"], "instances_sha256": inst_meta["sha256"],
        "prompts_sha256": PromptSet(guard_config.prompt_dir if guard_config else None).fingerprint(forms=mode == "guarded"),
        "prompt_forms": PromptSet.forms_version() if mode == "guarded" else None,
        "stepguard_version": getattr(stepguard, "__version__", "unknown"), "python": platform.python_version(),
    }
