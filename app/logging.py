"""Structured logging: one JSON object per line, with the request id bound per request."""

from __future__ import annotations

import logging
import re
import sys
import traceback
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from structlog.typing import ExcInfo

__all__ = ("configure_logging", "format_exception_safely")

_QUERY_TOKEN = re.compile(r"([?&]token=)[^&\s\"']+")
_QUERY_ARGUMENT = re.compile(r"(query argument \$\d+):.*")
"""asyncpg's message for an argument it cannot encode quotes the argument's value."""
_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def _safe_message(error: BaseException) -> str:
    """The message of ``error`` without the values a database error quotes.

    PostgreSQL's DETAIL of a failed write quotes the row ("Failing row contains (...)",
    "Key (...)=(...)") and asyncpg puts it in the exception's text; asyncpg's message for an
    argument it cannot encode quotes the argument.  A round log row holds a deal (every hand
    and the stock order), a user row a password hash.  (SQLAlchemy's own message would
    quote the parameters too: the engine hides them, ``hide_parameters``.)
    """
    import asyncpg

    if isinstance(error, asyncpg.PostgresError):
        message = str(error.args[0]) if error.args else ""
    else:
        message = str(error)
    if type(error).__module__.split(".")[0] in ("asyncpg", "sqlalchemy"):
        message = _QUERY_ARGUMENT.sub(r"\1: <value withheld>", message)
    return message


def format_exception_safely(exc_info: ExcInfo) -> str:
    """``traceback.format_exception`` of ``exc_info``, each message through
    :func:`_safe_message` (the frames and the chain of causes are kept)."""
    chain: list[tuple[BaseException, str]] = []
    seen: set[int] = set()
    current: BaseException | None = exc_info[1]
    link = ""
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append((current, link))
        if current.__cause__ is not None:
            current, link = current.__cause__, _CAUSE
        elif current.__context__ is not None and not current.__suppress_context__:
            current, link = current.__context__, _CONTEXT
        else:
            current = None
    parts: list[str] = []
    for error, link in reversed(chain):
        frames = traceback.format_tb(error.__traceback__)
        if frames:
            parts.append("Traceback (most recent call last):\n")
            parts.extend(frames)
        kind = type(error)
        name = kind.__qualname__
        if kind.__module__ not in ("builtins", "__main__"):
            name = f"{kind.__module__}.{name}"
        message = _safe_message(error)
        parts.append(f"{name}: {message}\n" if message else f"{name}\n")
        parts.extend(f"{note}\n" for note in getattr(error, "__notes__", ()))
        parts.append(link)
    return "".join(parts).rstrip("\n")


class RedactQueryTokens(logging.Filter):
    """Blanks bearer tokens in URLs: WebSocket clients send theirs in the query string,
    and uvicorn logs every WebSocket connection with its full path."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            message = record.getMessage()
            redacted = _QUERY_TOKEN.sub(r"\1<redacted>", message)
            if redacted != message:
                record.msg, record.args = redacted, None
        return True


def configure_logging(level: str = "INFO", *, json: bool = True) -> None:
    """Route stdlib and structlog records through one JSON (or console) renderer."""
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    format_exc_info = structlog.processors.ExceptionRenderer(format_exception_safely)
    structlog.configure(
        processors=[
            *shared,
            format_exc_info,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    handler.addFilter(RedactQueryTokens())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # uvicorn's access log duplicates our request log line; the scheduler logs every run
    logging.getLogger("uvicorn.access").disabled = True
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    # At DEBUG the WebSocket protocol logs every handshake (the bearer token is in the
    # query string) and every frame (players' views) through uvicorn's error logger.
    logging.getLogger("uvicorn.error").setLevel(max(logging.INFO, root.level))
