"""Imports every model module of the game service so its metadata is complete."""

from __future__ import annotations

from app.accounts import models as _accounts  # noqa: F401
from app.compliance import models as _compliance  # noqa: F401
from app.db.base import GameBase
from app.tables import fees as _fees  # noqa: F401
from app.tables import models as _tables  # noqa: F401
from app.timers import models as _timers  # noqa: F401

__all__ = ("GameBase",)
