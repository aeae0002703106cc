"""The exception hierarchy of the ``rng`` package.

Every error the package raises on purpose derives from :class:`RngError`, so a caller can catch
the whole family with one ``except``. Each module that needs its own kind of failure has exactly
one subclass of it.
"""

from __future__ import annotations

__all__ = ("RngError",)


class RngError(ValueError):
    """An input to the ``rng`` package broke one of its documented rules.

    It subclasses :class:`ValueError` because every such failure is a bad argument value: the
    package keeps no hidden state that could make a well-formed call fail.
    """
