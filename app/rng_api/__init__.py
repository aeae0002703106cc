"""The RNG service inside the app: building it from settings, its HTTP routes, its errors.

The ``rng`` package knows nothing of the app; this context wires it in. The game service gets an
:class:`rng.service.RngService` for its session from ``app.state.rng_services`` (an
:class:`RngServices`, built once per app from the settings) or by declaring a ``rng_service``
dependency.
"""

from __future__ import annotations

from app.rng_api.controllers import RngController
from app.rng_api.errors import app_error_of, rng_service_error_handler
from app.rng_api.factory import RngServices, provide_rng_service

__all__ = (
    "RngController",
    "RngServices",
    "app_error_of",
    "provide_rng_service",
    "rng_service_error_handler",
)
