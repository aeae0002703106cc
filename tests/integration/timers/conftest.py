from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.db import Database


@pytest.fixture
async def database(settings) -> AsyncIterator[Database]:
    db = Database.connect(settings.database_url, settings)
    yield db
    await db.dispose()
