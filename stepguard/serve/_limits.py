"""The proxy's request-size limit: an ASGI middleware that refuses (413) a request body over a number
of bytes before the routes read it, whether the size is declared (``content-length``) or streamed in
chunks; every route reads a body whole, so without a limit one request could take the worker's memory."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stepguard.serve import _responses as out

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BodyLimit", "check_max_bytes"]

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
"""32 MiB: far above a chat request with documents in its context, far below a worker's memory."""


def check_max_bytes(max_bytes: object) -> int:
    """``max_bytes`` itself when it is a whole number of at least 1.

    Raises:
        ValueError: anything else (names the value), before a server starts with it.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_body_bytes must be a whole number of bytes, at least 1; got {max_bytes!r}")
    return max_bytes


class BodyLimit:
    """Answer 413 (an OpenAI-shaped error, code ``request_too_large``) for an HTTP request whose body is
    over ``max_bytes``; a body within it is passed on unchanged (read here, then replayed to the app);
    a body the client stopped sending is dropped (neither answered nor forwarded).

    Raises:
        ValueError: ``max_bytes`` is not a whole number of at least 1 (:func:`check_max_bytes`).
    """

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = check_max_bytes(max_bytes)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, size: str) -> None:
        from starlette.responses import JSONResponse

        body = out.error_body(f"request body {size}: over this proxy's limit of {self.max_bytes} bytes "
                              f"(stepguard serve --max-body-mb)", "invalid_request_error", None, "request_too_large")
        await JSONResponse(body, status_code=413, headers={"connection": "close"})(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        # a chunked body's size is what arrives (HTTP/1.1: Transfer-Encoding overrides Content-Length)
        if b"transfer-encoding" not in headers and declared is not None and declared.isdigit() \
                and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send, f"of {int(declared)} bytes (declared)")
            return
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before its body was whole: nothing is answered or forwarded
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, "sent in chunks")
                return
            parts.append(chunk)
            if not message.get("more_body", False):
                break
        replay: list[Message] = [{"type": "http.request", "body": b"".join(parts), "more_body": False}]

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)
