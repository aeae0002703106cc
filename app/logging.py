"""Structured logging: one JSON object per line, with the request id bound per request."""

from __future__ import annotations

import logging
import re
import sys

import structlog

__all__ = ("configure_logging",)

_QUERY_TOKEN = re.compile(r"([?&]token=)[^&\s\"']+")


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
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.format_exc_info,
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
            structlog.processors.format_exc_info,
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
