"""Fixtures for compliance tests: fast timers, as for table tests."""

from __future__ import annotations

import pytest

from tests.conftest import make_settings


@pytest.fixture
def settings(database_url):
    """Fast, test-only timers; presence never expires."""
    return make_settings(
        database_url,
        allow_timer_overrides=True,
        presence_grace_s=3600,
        scheduler_poll_interval_s=0.05,
    )
