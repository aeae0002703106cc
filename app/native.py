"""Compiled builds of the heuristic bot, used only when they were built from the current source.

``app/games/bots.py`` (the robot player of simulations, the demo and load tests) is plain
Python; ``make native`` (run by ``make test`` and ``make run``) also compiles it with mypyc,
the compiler that ships with mypy, into ``build/native``. The compiled module is the same
source turned into a C extension: bot matches run 20-25 % faster with it, and ``raiz
simulate`` reaches its rounds-per-second goal (docs/rules-engine.md, Figures).

Only the bot is compiled. The rules engine, the solver, the views and the verifiers stay
interpreted: they are what compliance re-executes for years, and one form of them is easier
to prove than two. A bot's actions reach the engine as inputs like any player's, so a
compiled bot cannot change what the engine accepts or records.

The compiled module is used only when its stamp -- the SHA-256 of every module of
``app/games`` it was compiled against -- equals the digest of the current sources; after any
edit the plain module is imported until ``make native`` runs again, so a stale build never
shadows an edit. ``RAIZ_NATIVE=0`` turns compiled modules off.

``python -m app.native`` builds (it needs a C compiler and the Python headers).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NATIVE_ROOT = ROOT / "build" / "native"
"""Where ``python -m app.native`` puts the compiled modules, one directory per package."""

COMPILED = {"app.games": ("bots",)}
"""The compiled modules of each package."""

STAMP = "native.sha256"


def package_dir(package: str) -> Path:
    """The source directory of ``package`` in this checkout."""
    return ROOT.joinpath(*package.split("."))


def source_digest(package: str) -> str:
    """SHA-256 over the package's modules (name and bytes, in name order): a compiled module
    depends on the types of the modules it imports, so any edit in the package asks for a
    new build."""
    digest = hashlib.sha256()
    for path in sorted(package_dir(package).glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def native_dir(package: str) -> Path | None:
    """The directory of ``package``'s compiled modules, if they are current and enabled."""
    if os.environ.get("RAIZ_NATIVE", "1") == "0" or package not in COMPILED:
        return None
    directory = NATIVE_ROOT.joinpath(*package.split("."))
    try:
        stamp = (directory / STAMP).read_text().strip()
    except OSError:
        return None
    return directory if stamp == source_digest(package) else None


def prefer_native(package: str, path: list[str]) -> None:
    """Put the current compiled build of ``package`` (if any) first on its ``__path__``
    (``path``), so that its compiled modules are imported instead of their sources."""
    directory = native_dir(package)
    if directory is not None and str(directory) not in path:
        path.insert(0, str(directory))


def build() -> None:
    """Compile every module of ``COMPILED`` with mypyc into ``NATIVE_ROOT`` and stamp it."""
    from mypyc.build import mypycify  # the dev tools' mypy; imported only to build
    from setuptools import setup

    for package, modules in COMPILED.items():
        digest = source_digest(package)
        sources = [str(package_dir(package) / f"{module}.py") for module in modules]
        target = NATIVE_ROOT.joinpath(*package.split("."))
        shutil.rmtree(target, ignore_errors=True)
        with tempfile.TemporaryDirectory() as scratch:
            build_lib = Path(scratch) / "lib"
            previous = Path.cwd()
            try:
                os.chdir(ROOT)  # mypyc names the modules by their paths from the root
                extensions = mypycify(
                    [os.path.relpath(source, ROOT) for source in sources],
                    opt_level="3",
                    target_dir=str(Path(scratch) / "c"),
                    group_name=f"{package}.native",  # its shared library stays in the package
                )
                os.chdir(scratch)  # (setuptools would read the project's pyproject.toml)
                setup(
                    name="raiz-native",
                    ext_modules=extensions,
                    script_args=[
                        "--quiet",
                        "build_ext",
                        "--build-lib",
                        str(build_lib),
                        "--build-temp",
                        str(Path(scratch) / "temp"),
                    ],
                )
            finally:
                os.chdir(previous)
            built = build_lib.joinpath(*package.split("."))
            target.mkdir(parents=True)
            for extension in built.iterdir():
                shutil.copy2(extension, target / extension.name)
        (target / STAMP).write_text(digest + "\n")
        print(f"compiled {', '.join(modules)} of {package} into {target}", file=sys.stderr)


if __name__ == "__main__":
    build()
