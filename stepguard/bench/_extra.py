"""The benchmark's extra imports: :func:`stepguard._extra.import_extra`, whose default extra is ``bench``."""

from stepguard._extra import import_extra

__all__ = ["import_extra"]
