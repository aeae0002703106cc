"""One seed sealer per app, and an :class:`rng.service.RngService` per database session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from litestar.datastructures import State

from app.api.deps import DbSession
from app.config import ConfigurationError
from rng.sealing import SealingError, SeedSealer, parse_keyring
from rng.service import RngService

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings

__all__ = ("RngServices", "provide_rng_service")


class RngServices:
    """Hands out an :class:`RngService` for a session, all sharing one sealer.

    Build it with :meth:`from_settings`; the game service calls :meth:`for_session` inside its
    own transaction (the RNG service never commits).
    """

    __slots__ = ("_allow_fixed", "_sealer")

    def __init__(self, sealer: SeedSealer, *, allow_fixed: bool) -> None:
        self._sealer = sealer
        self._allow_fixed = allow_fixed

    def __repr__(self) -> str:
        return f"RngServices(sealer={self._sealer!r}, allow_fixed={self._allow_fixed})"

    @classmethod
    def from_settings(cls, settings: Settings) -> RngServices:
        """The sealer from ``seed_keyring`` and ``seed_active_key_id`` (default: first key).

        Fixed decks follow ``allow_fixed_decks``, and are off in production whatever it says.
        A malformed keyring raises :class:`app.config.ConfigurationError` (no key material in
        the message).
        """
        try:
            keys = parse_keyring(settings.seed_keyring)
            active_key_id = settings.seed_active_key_id or next(iter(keys))
            sealer = SeedSealer(keys, active_key_id)
        except SealingError as error:
            msg = f"RAIZ_SEED_KEYRING / RAIZ_SEED_ACTIVE_KEY_ID are unusable: {error}"
            raise ConfigurationError(msg) from None
        allow_fixed = settings.allow_fixed_decks and settings.env != "production"
        return cls(sealer, allow_fixed=allow_fixed)

    @property
    def sealer(self) -> SeedSealer:
        """The app's seed sealer."""
        return self._sealer

    @property
    def allow_fixed(self) -> bool:
        """Whether services built here accept test-only fixed streams."""
        return self._allow_fixed

    def for_session(self, session: AsyncSession) -> RngService:
        """An RNG service working in ``session``'s transaction."""
        return RngService(session, self._sealer, allow_fixed=self._allow_fixed)


def provide_rng_service(db_session: DbSession, state: State) -> RngService:
    """Dependency ``rng_service``: the RNG service on the request's session."""
    services: RngServices = state.rng_services
    return services.for_session(db_session)
