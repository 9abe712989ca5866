"""The proxy's ASGI application: OpenAI-compatible routes in front of one upstream model.

Routes::

    POST /v1/chat/completions   guarded when the request names a procedure, else passed through
    GET  /v1/models             stepguard/<procedure> for each procedure served, then the upstream's models
    *    /v1/<anything else>    passed through to the upstream (when it has an HTTP endpoint)

A guarded run executes in a worker thread (``Guard.run``, or ``Guard.stream`` for a streamed
request: the controller's parsing, checking and checkpoint writes stay off the event loop, which
keeps serving pass-through traffic), at most ``max_runs`` at a time; a run whose client went away
still finishes and is checkpointed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import posixpath
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from stepguard.errors import BudgetExhausted, CheckpointError, EvaluationError, ModelError, ModelTimeout, ProcedureError, StepDeviation
from stepguard.guard import Guard, GuardConfig, GuardResult, GuardUpdate
from stepguard.model import GenerationSettings
from stepguard.procedure import Procedure, check_input_names
from stepguard.serve import _responses as out
from stepguard.serve._limits import DEFAULT_MAX_BODY_BYTES, BodyLimit, check_max_bytes
from stepguard.serve._options import MODEL_PREFIX, GuardedRequest, RequestError, guarded_request, names_a_procedure
from stepguard.serve._sending import sending_model
from stepguard.serve._upstream import Upstream
from stepguard.tools import ToolSet, as_toolset, missing_tools
from stepguard.wire import SEED_RANGE, TOKENS_RANGE, Chunker, check_tree, chunk_body, flag_field, integer_field, number_field, read_body

__all__ = ["ProxyState", "create_app"]

log = logging.getLogger("stepguard.serve")


class _ExactJSONResponse(JSONResponse):
    """A JSON response whose numbers are exact (a result's list or JSON value holds ``Decimal``: see
    :mod:`stepguard.guard`'s result), written by :func:`stepguard.serve._responses.json_body`."""

    def render(self, content: Any) -> bytes:
        return out.json_body(content).encode("utf-8")


def _json(status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> JSONResponse:
    return _ExactJSONResponse(body, status_code=status, headers=dict(headers or {}))


def _error(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The HTTP status and OpenAI-shaped error body for an error of a guarded run."""
    if isinstance(exc, RequestError):
        return exc.status, out.error_body(exc.message, "invalid_request_error", exc.param, exc.code, **exc.extra)
    if isinstance(exc, (StepDeviation, BudgetExhausted)):
        partial = exc.result.model_dump(mode="json") if isinstance(exc.result, GuardResult) else None
        return 422, out.error_body(str(exc), "stepguard_run_failed", None, type(exc).__name__, stepguard=partial)
    if isinstance(exc, (ProcedureError, EvaluationError)):
        return 400, out.error_body(str(exc), "invalid_request_error", "stepguard.inputs", "invalid_inputs")
    if isinstance(exc, CheckpointError):
        return 409, out.error_body(str(exc), "invalid_request_error", "stepguard.thread_id", "thread_holds_other_work")
    if isinstance(exc, ModelTimeout):
        return 504, out.error_body(str(exc), "upstream_error", None, "upstream_timeout")
    if isinstance(exc, ModelError):
        return 502, out.error_body(str(exc), "upstream_error", None, "upstream_error")
    log.error("guarded run failed: %s: %s", type(exc).__name__, exc)
    return 500, out.error_body(f"internal error: {type(exc).__name__}", "server_error", None, "internal_error")


class ProxyState:
    """What the routes share: the upstream, the procedures, the guards, the run limiter.

    Args:
        upstream: the model behind the proxy.
        procedures: ``{name: Procedure}`` served as ``stepguard/<name>``.
        config: the proxy's GuardConfig (``None``: each procedure's measured defaults,
            :meth:`GuardConfig.for_procedure`); a request's options override it field by field.
        checkpointer: a LangGraph checkpointer shared by the guarded runs that name a ``thread_id``
            (SQLite for one machine, Postgres for several workers), or ``None``: no run takes a ``thread_id``.
        max_runs: guarded runs executing at once (each holds a worker thread); more wait their turn.
        tools: the tools the procedures' tool steps call (as ``Guard(model, tools=...)``); a request
            for a procedure that calls a tool not among them is refused (400 ``missing_tools``).
        observer: every guarded run's observer (``stepguard.telemetry.OtelObserver``); ``None``: the
            global telemetry, traced once an application sets OpenTelemetry's global provider.
    """

    def __init__(self, upstream: Upstream, procedures: Mapping[str, Procedure], config: GuardConfig | None = None,
                 checkpointer: Any | None = None, max_runs: int = 32,
                 tools: ToolSet | Mapping[str, Any] | Iterable[Any] | None = None, observer: Any | None = None) -> None:
        self.upstream = upstream
        self.observer = observer  # None: the global telemetry (GlobalTelemetry); set by the lifespan for --otel/--trace-file
        self.procedures = dict(procedures)
        self.tools = as_toolset(tools)
        self.config = config  # None: each procedure's measured defaults (GuardConfig.for_procedure)
        self.checkpointer = checkpointer
        self.max_runs = max_runs
        self._limiter: anyio.CapacityLimiter | None = None
        self._guards: OrderedDict[tuple[Any, ...], Guard] = OrderedDict()
        self._lock = threading.Lock()

    def guard(self, job: GuardedRequest) -> Guard:
        """A guard for ``job``'s procedure and settings (compiling one takes ~25 ms: kept, 128 at most).

        Only a run with a ``thread_id`` is checkpointed: one without could never be resumed, and
        would leave a thread in the database for every request.
        """
        saver = self.checkpointer if job.thread_id is not None else None
        key = (job.name, repr(job.config), saver is not None, repr(sorted(job.sent.items())), job.max_tokens)
        with self._lock:
            guard = self._guards.get(key)
            if guard is not None:
                self._guards.move_to_end(key)
                return guard
        model = sending_model(self.upstream.guard_model(job.procedure, job.name), job.sent, job.max_tokens, self.upstream.spec)
        guard = Guard(model, job.config, saver, tools=self.tools, observer=self.observer)
        with self._lock:
            self._guards[key] = guard
            while len(self._guards) > 128:
                self._guards.popitem(last=False)
        return guard

    async def _in_thread(self, work: Callable[[], Any]) -> Any:
        """``work()`` in a worker thread, at most ``max_runs`` at once."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.max_runs)
        return await anyio.to_thread.run_sync(work, limiter=self._limiter)

    async def run(self, job: GuardedRequest) -> GuardResult:
        """Run ``job`` under the guard in a worker thread.

        Raises:
            As :meth:`stepguard.guard.Guard.run`.
        """
        guard = self.guard(job)
        result: GuardResult = await self._in_thread(lambda: guard.run(job.procedure, job.inputs, thread_id=job.thread_id,
                                                                           context=job.context))
        return result

    async def stream(self, job: GuardedRequest) -> AsyncIterator[GuardUpdate]:
        """What :meth:`stepguard.guard.Guard.stream` yields for ``job`` (run in a worker thread), as it comes.

        A reader that stops early (a client that disconnects) stops the run (its ``stop``): a streamed
        window in flight is cut and the upstream stops generating, and no model call starts after it,
        a derived rung's nested calls included; committed chunks stay checkpointed.

        Raises:
            As :meth:`stepguard.guard.Guard.run`, from the iteration, after the items before it.
        """
        guard = self.guard(job)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[GuardUpdate] = asyncio.Queue()

        gone = threading.Event()

        def work() -> None:
            items = guard.stream(job.procedure, job.inputs, thread_id=job.thread_id, context=job.context, stop=gone)
            try:
                for item in items:
                    if gone.is_set():
                        return
                    loop.call_soon_threadsafe(queue.put_nowait, item)
            finally:
                items.close()  # the reader went: the guard cuts a window in flight (Guard.stream)

        run = asyncio.ensure_future(self._in_thread(work))
        try:
            while not run.done() or not queue.empty():
                if queue.empty():
                    get = asyncio.ensure_future(queue.get())
                    done, _ = await asyncio.wait({get, run}, return_when=asyncio.FIRST_COMPLETED)
                    if get not in done:
                        get.cancel()
                        continue
                    yield get.result()
                else:
                    yield queue.get_nowait()
            run.result()  # the run's error, if it failed
        finally:
            if not run.done():  # the reader went away: the run stops at its next item
                gone.set()
                run.add_done_callback(lambda f: f.cancelled() or f.exception())


def _check_inputs(state: ProxyState, job: GuardedRequest) -> None:
    """Refuse bad inputs, or a procedure whose tools the proxy was not given (400), before a stream
    starts: the errors ``Guard.run`` raises before any model call."""
    state.guard(job)  # an upstream that cannot send the request's fields refuses them here (400), before a stream
    missing = missing_tools(job.procedure, state.tools)
    if missing:
        raise RequestError(400, f"procedure {job.name!r} calls {', '.join(missing)}, which this proxy was not given "
                                f"(start it with --tools MODULE:ATTR)", "stepguard.procedure", "missing_tools")
    try:  # the names first, with "did you mean", as every way in checks them
        check_input_names([i.name for i in job.procedure.inputs], job.inputs, f"procedure {job.name!r}")
        job.procedure.expected_values(job.procedure.bind_inputs(job.inputs))
    except (ProcedureError, EvaluationError) as exc:
        raise RequestError(400, str(exc), "stepguard.inputs", "invalid_inputs") from None


async def _guarded(state: ProxyState, job: GuardedRequest) -> Response:
    _check_inputs(state, job)
    if not job.stream:
        try:
            result = await state.run(job)
        except Exception as exc:  # noqa: BLE001 - every error becomes an HTTP answer
            status, body = _error(exc)
            return _json(status, body)
        return _json(200, out.completion(result, job.model, job.shape))
    if job.thread_id is not None:  # a thread of other work is a 409, as without streaming, not an error event
        guard = state.guard(job)
        try:
            await state._in_thread(lambda: guard.check_thread(job.procedure, job.inputs, job.thread_id, context=job.context))
        except Exception as exc:  # noqa: BLE001 - every error becomes an HTTP answer
            return _json(*_error(exc))
    return StreamingResponse(_guarded_events(state, job), media_type="text/event-stream",
                             headers={"cache-control": "no-cache", "x-accel-buffering": "no"})


async def _guarded_events(state: ProxyState, job: GuardedRequest) -> AsyncIterator[bytes]:
    """SSE of a guarded run: the drop-in client's chunks (:class:`Chunker`), each with its event under
    ``stepguard`` (a committed step, a deviation, the result last), then ``[DONE]``; an error after
    the stream started is an ``error`` event."""
    chunker = Chunker(job.model, job.shape)
    yield out.sse(chunker.first_body())
    try:
        async for item in state.stream(job):
            body = chunker.body(item)
            if body is not None:
                yield out.sse({**body, out.KEY: out.event(item)})  # type: ignore[arg-type]  # a chunk body is a JSON dict; its TypedDict does not list the stepguard key
    except Exception as exc:  # noqa: BLE001 - told in the stream: the status line was sent already
        yield out.sse(_error(exc)[1])
    yield out.sse("[DONE]")


async def _forward(state: ProxyState, request: Request, path: str, body: bytes,
                   data: dict[str, Any] | None = None) -> Response:
    """Pass a request through to the upstream's endpoint unchanged; answer with the upstream's answer.

    ``data`` is a chat request's body, read (an upstream with no endpoint answers it itself). A
    server-sent event stream is relayed as it comes; any other body is read whole and sent in one write.
    """
    up = state.upstream
    if up.base_url is None:
        if data is not None:
            return await _answer_plain(state, data)
        return _json(404, out.error_body(f"the upstream {up.spec} serves only /v1/chat/completions and /v1/models",
                                         "invalid_request_error", None, "not_found"))
    query = request.url.query
    url = f"{up.base_url}/{path}" + (f"?{query}" if query else "")
    client = up.http()
    try:
        req = client.build_request(request.method, url, content=body, headers=up.headers(request.headers))
        resp = await client.send(req, stream=True)
    except Exception as exc:  # noqa: BLE001 - httpx's errors, and a URL it cannot build
        return _json(502, out.error_body(f"the upstream {up.base_url} could not be reached: {type(exc).__name__}: {exc}",
                                         "upstream_error", None, "upstream_unreachable"))

    headers = up.response_headers(resp.headers)
    if "text/event-stream" not in resp.headers.get("content-type", ""):  # a whole body: one write, with its length
        try:
            content = await resp.aread()
        except Exception as exc:  # noqa: BLE001 - the upstream broke off mid-body
            return _json(502, out.error_body(f"the upstream {up.base_url} broke off its answer: {type(exc).__name__}",
                                             "upstream_error", None, "upstream_broken"))
        finally:
            await resp.aclose()
        return Response(content, status_code=resp.status_code, headers=headers)

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for piece in resp.aiter_bytes():
                yield piece
        finally:
            await resp.aclose()

    return StreamingResponse(relay(), status_code=resp.status_code, headers=headers)


async def _answer_plain(state: ProxyState, data: dict[str, Any]) -> Response:
    """A plain chat request to an upstream with no endpoint (``sim``): the model answers it.

    Raises:
        RequestError: 400: no messages, or a sampling field of the wrong type or out of range.
    """
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "messages: a non-empty list of messages is required", "messages", "invalid_messages")
    check_tree(data)
    settings = GenerationSettings(number_field(data, "temperature", 0.0, 2.0), integer_field(data, "seed", *SEED_RANGE),
                                  integer_field(data, "max_tokens", *TOKENS_RANGE))
    stream = flag_field(data, "stream")
    model = str(data.get("model") or state.upstream.model_name)
    try:
        reply = await state.upstream.model.acomplete(messages, settings)
    except Exception as exc:  # noqa: BLE001
        status, err = _error(exc)
        return _json(status, err)
    done = out.model_completion(reply, model)
    if not stream:
        return _json(200, done)

    async def events() -> AsyncIterator[bytes]:
        yield out.sse(chunk_body(done["id"], model, done["created"], {"role": "assistant", "content": reply.text}))
        yield out.sse(chunk_body(done["id"], model, done["created"], {}, finish=reply.finish_reason or "stop"))
        yield out.sse("[DONE]")

    return StreamingResponse(events(), media_type="text/event-stream")


def _names_a_procedure(body: bytes) -> bool:
    """Does a request body ask for a procedure (a ``stepguard`` object, or a model ``stepguard/...`` in
    any spelling)? A body that cannot be read is taken to where its bytes mention ``stepguard`` at all
    (it is then refused, never forwarded)."""
    if not body:
        return False
    try:
        data = read_body(body)
    except RequestError:
        return b"stepguard" in body.lower()
    return "stepguard" in data or names_a_procedure(data.get("model"))


def _routes(state: ProxyState) -> list[Route]:
    async def chat(request: Request) -> Response:
        body = await request.body()
        try:
            data = read_body(body)  # a body the proxy cannot read is refused, never forwarded (it may name a procedure)
            job = guarded_request(data, state.procedures, state.config, checkpoints=state.checkpointer is not None)
            if job is None:
                return await _forward(state, request, "chat/completions", body, data)
            return await _guarded(state, job)
        except RequestError as exc:
            status, err = _error(exc)
            return _json(status, err)

    async def models(request: Request) -> Response:
        ours = [{"id": MODEL_PREFIX + name, "object": "model", "created": 0, "owned_by": "stepguard",
                 "stepguard": {"procedure": proc.name, "description": (proc.description or "").strip()[:200],
                               "inputs": {i.name: i.type for i in proc.inputs}}}
                for name, proc in state.procedures.items()]
        return _json(200, {"object": "list", "data": ours + await state.upstream.models()})

    async def other(request: Request) -> Response:
        path = request.path_params["path"]
        if request.method == "POST" and posixpath.normpath("/" + path.lstrip("/")) == "/chat/completions":
            return await chat(request)  # /v1/chat/completions/, /v1//chat/completions, /v1/x/../chat/completions: one route
        body = await request.body()
        if _names_a_procedure(body):  # /v1/completions, /v1/responses ...: an upstream that ignores the model would answer unguarded
            return _json(400, {"error": {"message": f"procedures are served on /v1/chat/completions only, not on /v1/{path}",
                                         "type": "invalid_request_error", "param": "model", "code": "unsupported_endpoint"}})
        return await _forward(state, request, path, body)

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/{path:path}", other, methods=methods),
    ]


async def _internal_error(request: Request, exc: Exception) -> Response:
    """An error no route answered: a 500 in the OpenAI shape (naming only the error's type), not plain text."""
    log.error("request failed: %s: %s", type(exc).__name__, exc)
    return _json(500, out.error_body(f"internal error: {type(exc).__name__}", "server_error", None, "internal_error"))


class _BearerAuth:
    """Refuse (401) every request without ``Authorization: Bearer <token>`` (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
            if not hmac.compare_digest(given, self._expected):
                body = out.error_body("missing or wrong bearer token", "invalid_request_error", None, "invalid_api_key")
                await _json(401, body, {"www-authenticate": "Bearer"})(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _start_telemetry(state: ProxyState, otel: bool, trace_file: str | Path | None) -> Any:
    """Configure this process's tracing as ``--otel`` / ``--trace-file`` ask, and give the runs its observer.

    An export that fails is logged once (a warning on ``stepguard.serve``); serving goes on.
    """
    from stepguard.telemetry import OtelObserver, configure_from_flags

    providers = configure_from_flags(otel, trace_file, on_export_failure=log.warning)
    if providers is not None:
        state.observer = OtelObserver(*providers)
    return providers


def create_app(upstream: Upstream, procedures: Mapping[str, Procedure], *, token: str | None = None,
               config: GuardConfig | None = None, checkpointer: Any | None = None, max_runs: int = 32,
               tools: ToolSet | Mapping[str, Any] | Iterable[Any] | None = None,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, otel: bool = False, trace_file: str | Path | None = None,
               observer: Any | None = None) -> Starlette:
    """The proxy as an ASGI application (serve it with uvicorn, or :class:`stepguard.serve.BackgroundServer`).

    Args:
        upstream: the model behind the proxy (started when the app starts: a ``local`` server).
        procedures: ``{name: Procedure}``, served as the models ``stepguard/<name>``.
        token: a bearer token every request must carry; ``None`` (or empty): no authentication.
        config: the GuardConfig of guarded runs (``None``: each procedure's measured defaults,
            :meth:`GuardConfig.for_procedure`); each request's ``stepguard`` options override it.
        checkpointer: shared by every guarded run (:func:`stepguard.serve.open_checkpointer`); needed for ``thread_id``.
        max_runs: guarded runs executing at once.
        tools: the tools the procedures' tool steps call (as ``Guard(model, tools=...)``); a request
            for a procedure that calls a tool not among them is refused (400 ``missing_tools``).
        max_body_bytes: the largest request body taken; a larger one is refused (413
            ``request_too_large``) before any route reads it (:class:`stepguard.serve._limits.BodyLimit`).
        otel: trace every guarded run over OTLP/HTTP (the OTEL_* endpoint, else
            ``http://127.0.0.1:4318``), as ``stepguard run --otel`` does (docs/tracing.md).
        trace_file: append every guarded run's spans to this file as OTLP/JSON lines, as
            ``stepguard run --trace-file``. With ``otel`` or ``trace_file`` the providers are made
            when the app starts (in each worker process) and flushed when it stops (at most 5 s).
        observer: an observer of your own for every guarded run (not with ``otel``/``trace_file``).

    Raises:
        ValueError: ``max_body_bytes`` is not a whole number of at least 1; ``observer`` with
            ``otel``/``trace_file``; an unsupported ``OTEL_EXPORTER_OTLP_PROTOCOL``, when the app starts.

    Returns:
        A Starlette application; ``app.state.proxy`` is its :class:`ProxyState`.
    """
    check_max_bytes(max_body_bytes)  # here, not when the server starts (a lifespan traceback there)
    traced = otel or trace_file is not None
    if traced and observer is not None:
        raise ValueError("give an observer, or otel/trace_file, not both")
    state = ProxyState(upstream, procedures, config, checkpointer, max_runs, tools, observer)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        providers = _start_telemetry(state, otel, trace_file) if traced else None  # per worker: providers do not cross fork
        try:
            await anyio.to_thread.run_sync(upstream.start)  # a local server takes seconds to start
            try:
                yield
            finally:
                await upstream.aclose()
        finally:
            if providers is not None:
                from stepguard.telemetry import shutdown

                await anyio.to_thread.run_sync(lambda: shutdown(5.0, providers))  # the last runs' spans, flushed
                state.observer = None

    # the token is checked first, so a stranger's large body is refused without being read
    middleware = [Middleware(_BearerAuth, token=token)] if token else []
    middleware.append(Middleware(BodyLimit, max_bytes=max_body_bytes))
    app = Starlette(routes=_routes(state), middleware=middleware, lifespan=lifespan,
                    exception_handlers={Exception: _internal_error})
    app.state.proxy = state
    return app
