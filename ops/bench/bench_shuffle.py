"""Benchmark the RNG: 104-card shuffles, verified rounds and HMAC_DRBG bytes per second.

Run from the repository root::

    python ops/bench/bench_shuffle.py [--seconds 2]

Not a test: it prints figures and asserts nothing. Each figure is the best of three timed runs
of about ``--seconds / 3`` each, to reduce noise from other processes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

DECK_SIZE = 104
RESHUFFLE_SIZE = 57
PLAYER_COUNT = 4
GENERATE_CHUNK_BYTES = 65536
RUNS = 3


def best_rate(operation: Callable[[], object], seconds: float) -> float:
    """Operations per second: the best of ``RUNS`` runs of about ``seconds / RUNS`` each."""
    best = 0.0
    for _ in range(RUNS):
        count = 0
        started = time.perf_counter()
        deadline = started + seconds / RUNS
        while True:
            operation()
            count += 1
            now = time.perf_counter()
            if now >= deadline:
                break
        best = max(best, count / (now - started))
    return best


def main() -> None:
    from rng.drbg import HmacDrbg
    from rng.shuffle import BlockStream, permutation
    from rng.streams import commitment, derive_stream, new_round_seed
    from rng.verification import verify_round
    from rng.version_1 import STREAM_BLOCK_BYTES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per figure")
    seconds = parser.parse_args().seconds

    seed = new_round_seed()
    client_seeds = [b"client-seed-one!", b"client-seed-two!"]
    drbg = HmacDrbg(seed, bytes(16))
    stream = BlockStream(HmacDrbg(seed, bytes(16)), STREAM_BLOCK_BYTES)
    client_seeds_hex = [client_seed.hex() for client_seed in client_seeds]
    seed_commitment = commitment(seed)

    round_rate = best_rate(
        lambda: derive_stream(seed, "deal", client_seeds).permutation(DECK_SIZE), seconds
    )
    shuffle_rate = best_rate(lambda: permutation(stream, DECK_SIZE), seconds)
    verify_rate = best_rate(
        lambda: verify_round(
            seed_commitment,
            seed.hex(),
            client_seeds_hex,
            "raiz-rng/1",
            DECK_SIZE,
            reshuffle_sizes=[RESHUFFLE_SIZE],
            player_count=PLAYER_COUNT,
        ),
        seconds,
    )
    bulk_rate = best_rate(lambda: drbg.generate(GENERATE_CHUNK_BYTES), seconds)
    small_rate = best_rate(lambda: drbg.generate(1), seconds)

    print(f"python {sys.version.split()[0]}")
    print(
        f"shuffle {DECK_SIZE} cards, new stream each time "
        f"(mix 2 client seeds + instantiate + permutation): {round_rate:,.0f} /s"
    )
    print(f"shuffle {DECK_SIZE} cards, running stream (permutation only): {shuffle_rate:,.0f} /s")
    print(
        f"verify_round (commitment, {DECK_SIZE}-card deal, one {RESHUFFLE_SIZE}-card reshuffle, "
        f"first dealer of {PLAYER_COUNT}): {verify_rate:,.0f} rounds/s"
    )
    print(
        f"DRBG generate({GENERATE_CHUNK_BYTES}): {bulk_rate * GENERATE_CHUNK_BYTES / 1e6:,.1f} MB/s"
    )
    print(f"DRBG generate(1) requests: {small_rate:,.0f} /s")


if __name__ == "__main__":
    main()
