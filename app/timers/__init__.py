"""Durable deadlines: rows in PostgreSQL, fired by APScheduler in every worker.

A deadline is a row (table, kind, token, due time).  Every API worker runs an
APScheduler interval job that claims due rows with ``FOR UPDATE SKIP LOCKED`` and hands
each to the handler registered for its kind, in the same transaction that marks the row
handled.  Consequences:

- a deadline survives restarts (late ones fire at the first sweep after start);
- several workers never fire the same deadline twice (row lock + status);
- a crash while handling rolls back both the effect and the mark, so it fires again;
- a handler decides staleness itself (e.g. the token no longer matches the table's
  state) and reports it; stale deadlines are marked and do nothing.
"""

from __future__ import annotations

from app.timers.models import Deadline
from app.timers.runner import DeadlineHandler, DeadlineRunner, schedule_deadline
from app.timers.scheduler import build_scheduler

__all__ = ("Deadline", "DeadlineHandler", "DeadlineRunner", "build_scheduler", "schedule_deadline")
