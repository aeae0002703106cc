"""Fixtures of the ledger's integration tests: an engine and a way to run one operation
per transaction, as the game service and the API do."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from app.db.engine import async_url
from ledger import Ledger, LedgerError

T = TypeVar("T")


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """A pool big enough for the 50 concurrent debits (one connection each), and no bigger:
    the server's 100 connections are shared with everything else running."""
    engine = create_async_engine(async_url(database_url), pool_size=50, max_overflow=2)
    yield engine
    await engine.dispose()


class Runner:
    """Runs ledger work in its own transaction: commit on success, roll back on refusal."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.sessions = async_sessionmaker(engine, expire_on_commit=False)

    async def __call__(self, work: Callable[[Ledger], Awaitable[T]]) -> T:
        async with self.sessions() as session, session.begin():
            return await work(Ledger(session))

    async def refused(self, work: Callable[[Ledger], Awaitable[Any]]) -> LedgerError:
        """Run ``work`` expecting a refusal; return it."""
        with pytest.raises(LedgerError) as caught:
            await self(work)
        return caught.value

    async def scalar(self, sql: str, **params: Any) -> Any:
        async with self.engine.connect() as connection:
            return (await connection.execute(text(sql), params)).scalar()

    async def snapshot(self) -> tuple[Any, ...]:
        """Everything the ledger holds, to compare before and after a refused operation."""
        async with self.engine.connect() as connection:
            accounts = (
                await connection.execute(
                    text(
                        "SELECT id, balance_cents, version, closed_at FROM ledger.accounts"
                        " ORDER BY id"
                    )
                )
            ).all()
            counts = (
                await connection.execute(
                    text(
                        "SELECT (SELECT COUNT(*) FROM ledger.transfers),"
                        " (SELECT COUNT(*) FROM ledger.entries),"
                        " (SELECT COUNT(*) FROM ledger.settlements)"
                    )
                )
            ).one()
        return tuple(accounts), tuple(counts)


@pytest.fixture
async def sql(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A plain asyncpg connection, for what the ledger's API cannot do (tampering)."""
    connection = await asyncpg.connect(database_url)
    yield connection
    await connection.close()


@pytest.fixture
def run(engine: AsyncEngine) -> Runner:
    """``await run(lambda ledger: ledger.deposit(...))`` in its own transaction."""
    return Runner(engine)
