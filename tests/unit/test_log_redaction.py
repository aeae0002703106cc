"""Bearer tokens never reach the log, even in the URLs uvicorn logs."""

from __future__ import annotations

import logging

from app.logging import RedactQueryTokens


def _record(msg: object, *args: object) -> logging.LogRecord:
    return logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, msg, args, None)


def test_a_websocket_token_in_a_logged_path_is_blanked():
    record = _record(
        '%s - "WebSocket %s" %s', "127.0.0.1:5000", "/tables/abc/ws?token=s3cr3t-_x", "[accepted]"
    )
    assert RedactQueryTokens().filter(record)
    assert record.getMessage() == (
        '127.0.0.1:5000 - "WebSocket /tables/abc/ws?token=<redacted>" [accepted]'
    )
    other = _record("GET /x?a=1&token=abc&b=2")
    RedactQueryTokens().filter(other)
    assert other.getMessage() == "GET /x?a=1&token=<redacted>&b=2"


def test_other_records_are_left_alone():
    plain = _record("rounds %d", 3)
    RedactQueryTokens().filter(plain)
    assert plain.args == (3,) and plain.getMessage() == "rounds 3"
    structured = _record({"event": "request", "path": "/tables"})
    RedactQueryTokens().filter(structured)
    assert structured.msg == {"event": "request", "path": "/tables"}


def test_tracebacks_are_formatted_as_python_does_for_other_errors():
    import sys
    import traceback

    from app.logging import format_exception_safely

    def fail() -> None:
        try:
            try:
                raise KeyError("seat")
            except KeyError as error:
                raise ValueError("bad seat") from error
        except ValueError:
            raise RuntimeError()  # noqa: B904 - the context link is what is tested

    try:
        try:
            fail()
        except RuntimeError:
            raise OSError("disk") from None
    except OSError:
        expected = "".join(traceback.format_exception(*sys.exc_info())).rstrip("\n")
        assert format_exception_safely(sys.exc_info()) == expected
    try:
        fail()
    except RuntimeError:
        expected = "".join(traceback.format_exception(*sys.exc_info())).rstrip("\n")
        assert format_exception_safely(sys.exc_info()) == expected
        assert "During handling of the above exception" in expected
        assert "direct cause" in expected
