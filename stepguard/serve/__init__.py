"""The guarding proxy: an OpenAI-compatible HTTP server in front of any model spec.

A chat request that names a procedure (``model="stepguard/<name>"``, or a ``stepguard`` object in
its body) runs under :class:`stepguard.Guard` and is answered with a ChatCompletion whose content is
the verified answer and whose ``stepguard`` key holds the result; every other request passes through
to the upstream unchanged. See ``docs/proxy.md``; run it with ``stepguard serve``.

Needs the ``serve`` extra (Starlette, uvicorn): ``pip install 'stepguard[serve]'``. Names load on
first use; without the extra, using one raises :class:`~stepguard.errors.MissingExtraError`::

    from stepguard.serve import BackgroundServer, Upstream, create_app, load_procedure_folder

    app = create_app(Upstream("sim:perfect"), load_procedure_folder("examples"), token="s3cret")
    with BackgroundServer(app) as server:
        print(server.base_url)                  # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from stepguard._extra import import_extra

if TYPE_CHECKING:
    from stepguard.serve._app import ProxyState, create_app
    from stepguard.serve._options import MODEL_PREFIX, OPTION_KEYS, GuardedRequest, RequestError, guarded_request
    from stepguard.serve._procedures import load_procedure_folder
    from stepguard.serve._server import (
        TOKEN_ENV,
        BackgroundServer,
        ListenError,
        StartupError,
        app_from_env,
        listen,
        open_checkpointer,
        serve,
    )
    from stepguard.serve._upstream import Upstream

__all__ = [
    "MODEL_PREFIX",
    "OPTION_KEYS",
    "TOKEN_ENV",
    "BackgroundServer",
    "GuardedRequest",
    "ListenError",
    "ProxyState",
    "RequestError",
    "StartupError",
    "Upstream",
    "app_from_env",
    "create_app",
    "guarded_request",
    "listen",
    "load_procedure_folder",
    "open_checkpointer",
    "serve",
]

_HOMES = {
    "ProxyState": "_app", "create_app": "_app",
    "GuardedRequest": "_options", "MODEL_PREFIX": "_options", "OPTION_KEYS": "_options", "RequestError": "_options",
    "guarded_request": "_options",
    "load_procedure_folder": "_procedures",
    "BackgroundServer": "_server", "TOKEN_ENV": "_server", "app_from_env": "_server", "open_checkpointer": "_server",
    "serve": "_server", "listen": "_server", "ListenError": "_server", "StartupError": "_server",
    "Upstream": "_upstream",
}
_NEEDS_EXTRA = frozenset({"_app", "_server"})


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if home in _NEEDS_EXTRA:
        import_extra("starlette", "serve", "the guarding proxy (stepguard serve)")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    if hasattr(value, "__module__") and isinstance(value, type):
        value.__module__ = __name__
    return value
