"""README.md lists every setting the service reads and every ``raiz`` command."""

from __future__ import annotations

from pathlib import Path

import click

from app.cli import main
from app.config import Settings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_every_setting_is_in_the_configuration_table():
    table = README.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    for name in Settings.model_fields:
        variable = "DATABASE_URL" if name == "database_url" else f"RAIZ_{name.upper()}"
        assert f"`{variable}`" in table, f"{variable} is not documented"


def _commands(group: click.Group, prefix: str = "") -> set[str]:
    found = set()
    for name, command in group.commands.items():
        found.add(f"{prefix}{name}")
        if isinstance(command, click.Group):
            found |= _commands(command, f"{prefix}{name} ")
    return found


def _listed(block: str) -> set[str]:
    """Commands named in the README's command block: ``raiz deadlines failed | retry ID...``
    names ``deadlines failed`` and ``deadlines retry``."""
    listed = set()
    for line in block.splitlines():
        if not line.startswith("raiz "):
            continue
        words = line.split("#", 1)[0].split()[1:]
        group = main.commands.get(words[0])
        if not isinstance(group, click.Group):
            listed.add(words[0])
            continue
        alternatives = " ".join(words[1:]).split("|")
        listed |= {f"{words[0]} {part.split()[0]}" for part in alternatives if part.strip()}
    return listed


def test_the_command_line_section_lists_every_command_and_only_those():
    block = README.split("## Command line", 1)[1].split("```", 2)[1]
    existing = _commands(main)
    groups = {name for name in existing if isinstance(main.commands.get(name), click.Group)}
    listed = _listed(block)
    assert len(listed) >= 13
    assert existing - groups - listed == set(), "commands missing from the README"
    assert listed - existing == set(), "the README lists commands that do not exist"


def test_no_document_keeps_a_merge_conflict_marker():
    """A merge left ``<<<<<<<``/``=======``/``>>>>>>>`` lines in docs/operations.md once, with
    two versions of the database roles' table; nothing caught it."""
    root = Path(__file__).resolve().parents[2]
    documents = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in documents
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line == "======="
    ]
    assert found == [], found
