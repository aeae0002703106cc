"""Fixtures of the RNG service tests: a database, sealers, and a service per transaction."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import asyncpg
import pytest

from app.db import Database
from rng.sealing import SeedSealer
from rng.service import RngService

KEY_1 = bytes(range(32))
KEY_2 = bytes(range(100, 132))
SEALER = SeedSealer({"k1": KEY_1}, "k1")
"""The sealer most tests use."""

RngTransaction = Callable[..., AbstractAsyncContextManager[RngService]]


def seed_forms(seed: bytes) -> list[str]:
    """Every textual form in which a leaked seed could show up."""
    return [
        seed.hex(),
        seed.hex().upper(),
        base64.b64encode(seed).decode(),
        base64.urlsafe_b64encode(seed).decode(),
        base64.b64encode(seed).decode().rstrip("="),
        repr(seed)[2:-1],
    ]


@pytest.fixture
async def database(settings) -> AsyncIterator[Database]:
    db = Database.connect(settings.database_url, settings)
    yield db
    await db.dispose()


@pytest.fixture
def rng_transaction(database: Database) -> RngTransaction:
    """``async with rng_transaction() as service:`` runs one committed transaction."""

    @asynccontextmanager
    async def transaction(
        sealer: SeedSealer = SEALER, *, allow_fixed: bool = False
    ) -> AsyncIterator[RngService]:
        async with database.session() as session:
            yield RngService(session, sealer, allow_fixed=allow_fixed)
            await session.commit()

    return transaction


@pytest.fixture
async def raw(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A plain asyncpg connection to the test database, for looking under the service."""
    connection = await asyncpg.connect(database_url)
    yield connection
    await connection.close()


def new_table() -> uuid.UUID:
    return uuid.uuid4()
