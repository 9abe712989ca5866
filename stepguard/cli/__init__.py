"""The ``stepguard`` command: the composition root, the only place that picks adapters by name."""

from stepguard.cli._app import app, main

__all__ = ["app", "main"]
