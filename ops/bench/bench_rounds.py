"""Benchmark full ``cacheta-raiz`` rounds per second on one core.

Run from the repository root::

    python ops/bench/bench_rounds.py [--matches 200] [--players 4] [--seed 1]

Not a test: it prints figures and asserts nothing (best of three runs each).

* *bots*: ``raiz simulate`` -- heuristic bots playing from their player views (every decision
  builds a view and runs the solver), chance from the SHA-256 stand-in stream; the bot is the
  compiled one when ``make native`` has built it from the current sources (``app/native.py``;
  the first line says which), ``RAIZ_NATIVE=0`` measures the interpreted one;
* *engine replay*: the same matches re-applied from their recorded inputs (the rules engine
  alone, as the service and a compliance replay run it);
* *played*: the same, counting only rounds in which cards were played (closed or drawn),
  not rounds ended by the mandar/correr decisions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import app.games.bots
from app.games import HeuristicBot, play_match, replay, resolve_options, stand_in_chance_factory
from app.games.events import RoundEnded

RUNS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    options = resolve_options("cacheta-raiz")

    best_bots = 0.0
    matches = []
    for _ in range(RUNS):
        started = time.perf_counter()
        matches = [
            play_match(
                options,
                args.players,
                stand_in_chance_factory(args.seed, index),
                [HeuristicBot(seat, tie_break=index) for seat in range(args.players)],
            )
            for index in range(args.matches)
        ]
        best_bots = max(best_bots, 1 / (time.perf_counter() - started))
    ended = [event for match in matches for event in match.events if isinstance(event, RoundEnded)]
    rounds = len(ended)
    played = sum(event.result in ("closed", "drawn") for event in ended)
    inputs = sum(len(match.inputs) for match in matches)

    # replayed from the inputs' dict forms, as a log stores them (each is parsed again)
    recorded = [[action.to_dict() for action in match.inputs] for match in matches]
    best_replay = 0.0
    for _ in range(RUNS):
        started = time.perf_counter()
        for inputs_of_match in recorded:
            replay(options, args.players, inputs_of_match)
        best_replay = max(best_replay, 1 / (time.perf_counter() - started))

    compiled = not app.games.bots.__file__.endswith(".py")
    print(
        f"python {sys.version.split()[0]}, {args.matches} matches of {args.players} players, "
        f"seed {args.seed}; bot {'compiled (make native)' if compiled else 'interpreted'}"
    )
    print(f"rounds: {rounds} ({played} played, {rounds - played} ended at the decisions)")
    print(
        f"bots:          {rounds * best_bots:,.0f} rounds/s "
        f"({played * best_bots:,.0f} played rounds/s)"
    )
    print(
        f"engine replay: {rounds * best_replay:,.0f} rounds/s "
        f"({played * best_replay:,.0f} played rounds/s, {inputs * best_replay:,.0f} inputs/s)"
    )


if __name__ == "__main__":
    main()
