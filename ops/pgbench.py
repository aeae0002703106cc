"""Run pgbench's built-in TPC-B and read its figures (shared by the benchmark scripts)."""

from __future__ import annotations

import re
import subprocess

__all__ = ("tpcb",)


def tpcb(
    binary: str, url: str, clients: int, threads: int, seconds: int
) -> tuple[float, str | None]:
    """``pgbench -c clients -j threads -T seconds url``: (tps, average latency in ms or None).

    The database must have been initialised with ``pgbench -i``.
    """
    result = subprocess.run(
        [binary, "-c", str(clients), "-j", str(threads), "-T", str(seconds), url],
        check=True,
        capture_output=True,
        text=True,
    )
    match = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", result.stdout)
    if match is None:
        raise SystemExit("could not read pgbench's output:\n" + result.stdout)
    latency = re.search(r"latency average = ([0-9.]+) ms", result.stdout)
    return float(match.group(1)), latency.group(1) if latency else None
