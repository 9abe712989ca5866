"""The proxy's request-size limit: an ASGI middleware that refuses (413) a request body over a number
of bytes before the routes read it, whether the size is declared (``content-length``) or streamed in
chunks; every route reads a body whole, so without a limit one request could take the worker's memory."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stepguard.serve import _responses as out

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BodyLimit"]

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
"""32 MiB: far above a chat request with documents in its context, far below a worker's memory."""


class BodyLimit:
    """Answer 413 (an OpenAI-shaped error, code ``request_too_large``) for an HTTP request whose body is
    over ``max_bytes``; a body within it is passed on unchanged (read here, then replayed to the app)."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, got {max_bytes}")
        self.app = app
        self.max_bytes = max_bytes

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, size: str) -> None:
        from starlette.responses import JSONResponse

        body = out.error_body(f"request body {size} is over this proxy's limit of {self.max_bytes} bytes "
                              f"(stepguard serve --max-body-mb)", "invalid_request_error", None, "request_too_large")
        await JSONResponse(body, status_code=413, headers={"connection": "close"})(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send, f"of {int(declared)} bytes")
            return
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: the app sees it as it would
                parts_done: list[Message] = [message]
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, f"over {self.max_bytes} bytes (streamed)")
                return
            parts.append(chunk)
            if not message.get("more_body", False):
                parts_done = []
                break
        replay: list[Message] = [{"type": "http.request", "body": b"".join(parts), "more_body": False}, *parts_done]

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)
