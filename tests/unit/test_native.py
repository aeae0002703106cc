"""The compiled bot (app/native.py): used only when built from the current sources, and it
plays exactly as the interpreted one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import app.games.bots
from app import native

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake build of ``app.games`` under ``tmp_path``, stamped with the current digest."""
    monkeypatch.setattr(native, "NATIVE_ROOT", tmp_path)
    monkeypatch.delenv("RAIZ_NATIVE", raising=False)
    directory = tmp_path / "app" / "games"
    directory.mkdir(parents=True)
    (directory / native.STAMP).write_text(native.source_digest("app.games") + "\n")
    return directory


def test_a_build_stamped_with_the_current_sources_is_used(built: Path) -> None:
    assert native.native_dir("app.games") == built
    path = ["/src/app/games"]
    native.prefer_native("app.games", path)
    native.prefer_native("app.games", path)  # once only
    assert path == [str(built), "/src/app/games"]


def test_a_stale_or_unstamped_build_is_not_used(built: Path) -> None:
    (built / native.STAMP).write_text("0" * 64 + "\n")  # built from other sources
    assert native.native_dir("app.games") is None
    path = ["/src/app/games"]
    native.prefer_native("app.games", path)
    assert path == ["/src/app/games"]
    (built / native.STAMP).unlink()
    assert native.native_dir("app.games") is None


def test_raiz_native_0_turns_compiled_modules_off(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAIZ_NATIVE", "0")
    assert native.native_dir("app.games") is None
    assert native.native_dir("app.other") is None


def test_the_digest_covers_every_module_of_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("A = 1\n")
    (package / "b.py").write_text("B = 1\n")
    monkeypatch.setattr(native, "ROOT", tmp_path)
    before = native.source_digest("pkg")
    (package / "b.py").write_text("B = 2\n")  # a module the compiled one imports
    assert native.source_digest("pkg") != before
    (package / "b.py").write_text("B = 1\n")
    assert native.source_digest("pkg") == before


_PLAY = """
import hashlib, json, sys
import app.games.bots
from app.games import HeuristicBot, play_match, resolve_options, stand_in_chance_factory
from app.games.canonical import canonical_json
digest = hashlib.sha256()
for index, overrides in enumerate(({}, {"meld_shape": "any", "full_close_allowed": True},
                                   {"wilds_per_meld": 2, "meld_shape": "any"})):
    options = resolve_options("cacheta-raiz", overrides)
    for seats in (2, 3, 4):
        for number in range(6):
            match = play_match(options, seats, stand_in_chance_factory(9, number),
                               [HeuristicBot(seat, tie_break=index) for seat in range(seats)])
            for action in match.inputs:
                digest.update(canonical_json(action.to_dict()))
print(json.dumps({"module": app.games.bots.__file__, "inputs": digest.hexdigest()}))
"""


def _play(native_on: bool) -> dict[str, str]:
    env = {**os.environ, "RAIZ_NATIVE": "1" if native_on else "0"}
    done = subprocess.run(
        [sys.executable, "-c", _PLAY], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, str] = json.loads(done.stdout)
    return result


@pytest.mark.skipif(
    native.native_dir("app.games") is None,
    reason="no current build of the compiled bot (make native; make test builds it)",
)
def test_the_compiled_bot_plays_exactly_as_the_interpreted_one() -> None:
    """54 bot matches under three option sets: the same inputs, decision for decision."""
    assert app.games.bots.__file__.endswith(".so")  # this run uses the build
    compiled, interpreted = _play(native_on=True), _play(native_on=False)
    assert compiled["module"].endswith(".so")
    assert interpreted["module"].endswith("bots.py")
    assert compiled["inputs"] == interpreted["inputs"]
