"""Fixtures for table tests: funded players, an operator, fast timers."""

from __future__ import annotations

import pytest

from tests.conftest import make_settings


@pytest.fixture
def settings(database_url):
    """Fast, test-only timers; presence never expires unless a test says so."""
    return make_settings(
        database_url,
        allow_timer_overrides=True,
        presence_grace_s=3600,
        scheduler_poll_interval_s=0.05,
    )
