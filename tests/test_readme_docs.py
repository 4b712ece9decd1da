"""The README's pages under ``docs/`` are linked, land, and are true against the code's own tables (issue 32).

- Every ``docs/*.md`` page is linked from the README; every relative link of the README and of the pages names a
  file that exists, and its ``#anchor`` a heading of that file (GitHub's slugs). A page another branch writes is
  named in :data:`ELSEWHERE` until it lands here.
- ``docs/config.md`` names every option of ``mmd.daemon.config.OPTIONS`` with its flag, and its commented example
  holds every key (set, or as a commented line) and loads as ``mmd`` loads a config file, each value it sets the
  option's default.
- ``docs/wire.md`` names every RPC method with its params (``*`` the required ones), every event topic and error
  code of ``mmd.wire``; ``docs/cli.md`` every ``mmctl`` command.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
ELSEWHERE: dict[str, str] = {}
"""Pages the README links that another branch writes, with that branch: a link to one is not checked here."""


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (a link shown in an example is no link)."""
    return re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (``-`` and ``_`` kept), spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", _prose(_text(path)), re.M)}


def _links(path: Path) -> list[tuple[str, str]]:
    """``(target path, anchor)`` of every relative markdown link in the file (URLs and mail left out)."""
    found = re.findall(r"\]\(([^)\s]+)\)", _prose(_text(path)))
    return [(target, anchor) for target, _, anchor in (link.partition("#") for link in found)
            if not re.match(r"[a-z]+:", target)]


PAGES = sorted(DOCS.glob("*.md"))
FILES = [REPO / "README.md", *PAGES]


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(REPO / target).resolve() for target, _ in _links(REPO / "README.md") if target}
    assert PAGES and not [p.name for p in PAGES if p.resolve() not in linked]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_lands_on_a_file_and_a_heading(path: Path) -> None:
    broken = []
    for target, anchor in _links(path):
        file = (path.parent / target).resolve() if target else path
        name = file.relative_to(REPO).as_posix() if file.is_relative_to(REPO) else str(file)
        if name in ELSEWHERE:
            assert not file.exists(), f"{name} has landed: take it out of ELSEWHERE"
            continue
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (file.suffix != ".md" or anchor not in _anchors(file)):
            broken.append(f"{target}#{anchor}: no such heading")
    assert not broken, broken


def _example_keys(toml: str) -> set[str]:
    """The dotted keys the example sets or shows commented out, by the table each line is in."""
    keys, table = set(), ""
    for line in toml.splitlines():
        header = re.match(r"^\[\[?([\w.]+)\]\]?", line)
        if header:
            table = header.group(1) + "."
            if line.startswith("[["):
                keys.add(header.group(1))
            continue
        key = re.match(r"^#? ?(\w+) = ", line)
        if key:
            keys.add(table + key.group(1))
    return keys


def test_the_config_page_names_every_option_and_its_example_loads_as_the_defaults(tmp_path: Path) -> None:
    from mmd.core.config_file import read_config
    from mmd.daemon.config import OPTIONS, build_config

    page = _text(DOCS / "config.md")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w.]+)` \| `(--[\w-]+)", page, re.M)}
    assert {o.key: o.flag for o in OPTIONS} == rows
    example = re.search(r"^```toml\n(.*?)^```", page.split("## A commented example", 1)[1], re.S | re.M)
    assert example, "no toml block in config.md's example"
    tomllib.loads(example.group(1))
    assert _example_keys(example.group(1)) >= {o.key for o in OPTIONS}, sorted(
        {o.key for o in OPTIONS} - _example_keys(example.group(1)))
    file = tmp_path / "config.toml"
    file.write_text(example.group(1), encoding="utf-8")
    env = {"HOME": str(tmp_path / "home"), "DSH_HOME": str(tmp_path / "dsh"), "XDG_RUNTIME_DIR": str(tmp_path)}
    build_config({"config": str(file)}, env)  # refused (ConfigError) if a key or a value is not one mmd takes
    defaults = {o.key: o.default for o in OPTIONS}
    set_here = {k: v for k, v in read_config(file).items() if k != "daemon.sources"}
    assert {k: v for k, v in set_here.items() if v != defaults[k]} == {}


def test_the_wire_page_names_every_method_event_and_error_code() -> None:
    from mmd.core.errors import BudgetCode, ErrorCode
    from mmd.wire.events import TOPICS
    from mmd.wire.methods import METHODS
    from mmd.wire.protocol import DaemonCode

    page = _text(DOCS / "wire.md")
    table = set(re.findall(r"^\| `([\w./]+)` \|", page, re.M))
    assert set(METHODS) <= table and set(TOPICS) <= table, sorted((set(METHODS) | set(TOPICS)) - table)
    rows = {m.group(1): re.findall(r"`(\w+)(\*?)`", m.group(2))
            for m in re.finditer(r"^\| `([a-z]+\.[a-z]+)` \| ([^|]*) \|", page, re.M)}
    said = {name: ({p for p, _ in params}, {p for p, star in params if star}) for name, params in rows.items()}
    assert said == {m.name: (set(m.params), {p for p, row in m.params.items() if row.required})
                    for m in METHODS.values()}
    codes = {c.value for enum in (ErrorCode, BudgetCode, DaemonCode) for c in enum}
    assert not [c for c in codes if f"`{c}`" not in page]


def test_the_cli_page_names_every_command() -> None:
    from mmctl.cli.table import COMMANDS

    rows = set(re.findall(r"^\| `([a-z]+)", _text(DOCS / "cli.md"), re.M))
    assert set(COMMANDS) <= rows, sorted(set(COMMANDS) - rows)
