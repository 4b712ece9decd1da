"""The mm v1 conformance vectors, run through mmd.core (and, for `cli` ops, mmctl).

Reads every ``*.json`` in ``$MM_CONFORMANCE_DIR`` (default
``../shared/conformance/vectors``) and compares as that folder's README says.
Nothing here depends on vector names. ``DEVIATIONS`` (in
``tests/conformance_rules.py``) are the places where we follow the spec (or
DESIGN.md, or an issue) instead of the reference on purpose. Each has its reason
and a test of the right behaviour in the test module named there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from mmd.core import budget, digest, format, search, text, uri
from mmd.core.clock import iso_ms, parse_iso_ms
from mmd.core.errors import MMError
from mmd.core.memory import Memory
from mmd.core.options import MemoryOptions
from mmd.core.paths import STATE_DIR

from .conformance_rules import DEVIATIONS, Deviation, explained_by, explaining, files_as_reference, has_crlf, same
from .conftest import SHARED

FIXTURES = Path(__file__).resolve().parent / "fixtures"
VECTORS = Path(os.environ.get("MM_CONFORMANCE_DIR") or SHARED / "conformance" / "vectors")
DEFAULT_NOW = "2026-01-02T03:04:05.000Z"


class Session:
    """One vector's scripted session against a fresh root."""

    def __init__(self, case: dict[str, Any], base: Path) -> None:
        self.case = case
        self.base = base
        self.root = base / "root"
        self.home = base / "home"
        self.home.mkdir(parents=True)
        self.config = case.get("config", {})
        self.now = parse_iso_ms(self.config.get("now", DEFAULT_NOW))
        self.fts5 = bool(case.get("requires_fts5")) and search.fts5_available()
        self.memory: Memory | None = None

    def clock(self) -> datetime:
        return self.now

    def env(self) -> dict[str, str]:
        return {"DSH_HOME": str(self.home), "HOME": str(self.base)}

    def options(self, overrides: dict[str, Any] | None = None) -> MemoryOptions:
        c = {**self.config, **(overrides or {})}
        return MemoryOptions.create(
            root=self.root, env=self.env(), memory_id=c.get("memoryId"), index_lines=c.get("indexLines"),
            index_bytes=c.get("indexBytes"), detail_max_bytes=c.get("detailMaxBytes"),
            default_write_budget=c.get("defaultWriteBudget"), search_mode=c.get("searchMode"),
            search_limit=c.get("searchLimit"), max_snippet_chars=c.get("maxSnippetChars"))

    def start(self, mode: str, overrides: dict[str, Any] | None = None) -> Memory:
        factory = Memory.open if mode == "open" else Memory.ensure
        return factory(self.options(overrides), now=self.clock, fts5=self.fts5)

    def path(self, rel: str) -> Path:
        return self.home / rel[len("$HOME/"):] if rel.startswith("$HOME/") else self.root / rel

    def setup(self) -> dict[str, Any]:
        files = self.case.get("setup_files", {})
        if files or self.config.get("create_root", True) is not False:
            self.root.mkdir(parents=True, exist_ok=True)
        for rel, body in files.items():
            self._put(self.root / rel, body)
        for rel, body in self.case.get("setup_home_files", {}).items():
            self._put(self.home / rel, body)
        for rel, epoch in self.case.get("setup_mtimes", {}).items():
            os.utime(self.path(rel), (epoch, epoch))
        mode = self.config.get("open", "ensure")
        if mode == "none":
            return {"ok": True, "mode": "none"}
        try:
            self.memory = self.start(mode)
        except MMError as error:
            return {"ok": False, "mode": mode, "error": error.to_json()}
        m = self.memory
        return {"ok": True, "mode": mode, "memoryId": m.memory_id, "engine": m.engine,
                "loadedAt": m.loaded_at, "pendingWrites": m.pending_writes}

    @staticmethod
    def _put(path: Path, body: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body.encode("utf-8"))

    def run(self, op: dict[str, Any]) -> Any:
        name = op["op"]
        handler = getattr(self, f"op_{name}", None)
        if handler is not None:
            return handler(op)
        return PURE[name](op)

    # -- session ops
    def mem(self) -> Memory:
        if self.memory is None:
            raise MMError("E_SNAPSHOT", "memory is not loaded; call ensure()/open()/reload() first")  # type: ignore[arg-type]
        return self.memory

    def op_write(self, op: dict[str, Any]) -> Any:
        kwargs = {k: op[k] for k in ("summary", "tags", "budget", "updated") if k in op}
        return self.mem().write(op["topic"], op["content"], **kwargs)

    def op_delete(self, op: dict[str, Any]) -> Any:
        return self.mem().delete(op["topic"])

    def op_read(self, op: dict[str, Any]) -> Any:
        if "topic" not in op:
            return self.mem().read_index()
        note = self.mem().read_topic(op["topic"])
        return None if note is None else note.to_json()

    def op_list(self, op: dict[str, Any]) -> Any:
        return [n.to_json() for n in self.mem().list_notes()]

    def op_budget(self, op: dict[str, Any]) -> Any:
        return self.mem().budget()

    def op_search(self, op: dict[str, Any]) -> Any:
        return self.mem().search(op["query"], mode=op.get("mode"), limit=op.get("limit"))

    def op_digest(self, op: dict[str, Any]) -> Any:
        file = str(self.path(op["file"])) if "file" in op else None
        return self.mem().digest(text=op.get("text"), file=file, max_items=op.get("maxItems"),
                                 topic_hint=op.get("topicHint"))

    def op_reload(self, op: dict[str, Any]) -> Any:
        m = self.mem().reload()
        return {"pendingWrites": m.pending_writes, "loadedAt": m.loaded_at, "engine": m.engine}

    def op_pending(self, op: dict[str, Any]) -> Any:
        return self.mem().pending_writes

    def op_nudge(self, op: dict[str, Any]) -> Any:
        return self.mem().nudge()

    def op_uri(self, op: dict[str, Any]) -> Any:
        return self.mem().uri_for(op["topic"])

    def op_snapshot_meta(self, op: dict[str, Any]) -> Any:
        return self.mem().snapshot.meta_json()

    def op_reopen(self, op: dict[str, Any]) -> Any:
        memory = self.start(op.get("mode", "ensure"), op.get("config"))
        self.memory = memory
        return {"memoryId": memory.memory_id, "loadedAt": memory.loaded_at,
                "pendingWrites": memory.pending_writes, "engine": memory.engine}

    def op_clock(self, op: dict[str, Any]) -> Any:
        self.now = parse_iso_ms(op["now"])
        return iso_ms(self.now)

    def op_cli(self, op: dict[str, Any]) -> Any:
        """One ``mmctl`` process, as the README's harness runs the reference CLI (clock pinned by ``MMCTL_NOW``)."""
        subst = {"<ROOT>": str(self.root), "<DSH_HOME>": str(self.home)}

        def fill(value: str) -> str:
            for mark, real in subst.items():
                value = value.replace(mark, real)
            return value

        args = [fill(a) for a in op["args"]]
        if op.get("root", True) is not False:
            args += ["--root", str(self.root)]
        env = {k: v for k, v in os.environ.items() if k not in ("DSH_MEMORY_ROOT", "MMCTL_NO_DAEMON")}
        env.update(self.env(), MMCTL_NOW=iso_ms(self.now), MMCTL_FTS5="1" if self.fts5 else "0",
                   XDG_RUNTIME_DIR=str(self.base / "run"), XDG_CONFIG_HOME=str(self.base / "config"))
        env.update({k: fill(str(v)) for k, v in op.get("env", {}).items()})
        proc = subprocess.run([sys.executable, "-m", "mmctl", *args], env=env, cwd=self.base, capture_output=True,
                              timeout=60)
        stdout, stderr = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
        if stderr.startswith(("dsh-memory: internal error:", "mmctl: internal error:")):
            stderr = stderr.split("\n")[0]  # the reference prints a stack trace after it
        parsed = None
        if op.get("json", True) is not False:
            try:
                parsed = json.loads(stdout)
            except ValueError:
                parsed = None
        return {"exitCode": proc.returncode, "stdout": stdout, "stderr": stderr, "json": parsed}

    def op_write_file(self, op: dict[str, Any]) -> Any:
        self._put(self.path(op["path"]), op["text"])
        return True

    def op_remove_file(self, op: dict[str, Any]) -> Any:
        self.path(op["path"]).unlink()
        return True

    # -- final state
    def files(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for top, prefix in ((self.root, ""), (self.home, "$HOME/")):
            for path in sorted(top.rglob("*")) if top.exists() else []:
                rel = path.relative_to(top).as_posix()
                if path.is_file() and not _ours(rel):
                    out[prefix + rel] = path.read_bytes().decode("utf-8", "replace")
        return out

    def dirs(self) -> list[str]:
        if not self.root.exists():
            return []
        return sorted(p.relative_to(self.root).as_posix() + "/" for p in self.root.rglob("*")
                      if p.is_dir() and not _ours(p.relative_to(self.root).as_posix()))


def _ours(rel: str) -> bool:
    """The main root's own state folder: ignored by every mm reader, so not part of a vector's file listing
    (a state folder elsewhere, e.g. under $HOME, is listed and explained by the ``state-folders`` rule)."""
    return rel == STATE_DIR or rel.startswith(STATE_DIR + "/")


PURE: dict[str, Any] = {
    "parse_index": lambda op: format.parse_index(op["text"], op.get("memoryId")).to_json(),
    "serialize_index": lambda op: format.serialize_index(
        [_entry(e) for e in op["entries"]], memory_id=op["memoryId"], index_lines=op["indexLines"],
        index_bytes=op["indexBytes"]),
    "parse_note": lambda op: format.parse_note(op["text"]).to_json(),
    "serialize_note": lambda op: format.serialize_note(topic=op["topic"], memory_id=op["memoryId"],
                                                       file=op["file"], body=op["body"]),
    "parse_uri": lambda op: (lambda p: None if p is None else p.to_json())(uri.parse_uri(op["uri"])),
    "uri_for": lambda op: uri.uri_for(op["memoryId"], op["topic"]),
    "safe_rel_path": lambda op: format.safe_rel_path(op["path"]),
    "measure": lambda op: text.measure(op["text"]),
    "index_usage": lambda op: budget.index_usage(op["text"], op["indexLines"], op["indexBytes"]),
    "budget_pct": lambda op: budget.budget_pct(op["chars"], op["budget"]),
    "validate_topic": lambda op: text.validate_topic(op["topic"]),
    "slug": lambda op: text.slug_for_topic(op["text"]),
    "parse_tags": lambda op: text.parse_tags(op["text"]),
    "normalize_line": lambda op: text.normalize_line(op["text"]),
    "first_line": lambda op: text.first_line(op["text"], op.get("limit", 200)),
    "tokenize": lambda op: search.tokenize(op["text"]),
    "make_snippet": lambda op: search.make_snippet(op["haystack"], op["needle"], op["maxChars"]),
    "choose_engine": lambda op: search.choose_engine(op["requested"], op["fts5Available"]),
    "distill": lambda op: digest.distill(op["text"], max_items=op.get("maxItems"), topic_hint=op.get("topicHint"),
                                         default_write_budget=op.get("defaultWriteBudget")),
}


def _entry(raw: dict[str, Any]) -> Any:
    from mmd.core.model import IndexEntry

    return IndexEntry(topic=raw["topic"], memory_id=raw.get("memoryId", "local"), summary=raw.get("summary", ""),
                      tags=tuple(raw.get("tags", [])), file=raw.get("file", f"memories/{raw['topic']}.md"),
                      updated=raw.get("updated", ""), body_chars=raw.get("bodyChars", 0),
                      write_budget=raw.get("writeBudget", 0), entry_body=raw.get("entryBody", ""))


# --------------------------------------------------------------------------- comparison


def placeholders(value: Any, session: Session) -> Any:
    """Replace the session's real paths by ``<ROOT>``, ``<DSH_HOME>``, ``<BASE>``."""
    if isinstance(value, str):
        for real, mark in ((session.root, "<ROOT>"), (session.home, "<DSH_HOME>"), (session.base, "<BASE>")):
            value = value.replace(str(real), mark)
        return value
    if isinstance(value, list):
        return [placeholders(v, session) for v in value]
    if isinstance(value, dict):
        return {k: placeholders(v, session) for k, v in value.items()}
    return value


def outcome(session: Session, op: dict[str, Any]) -> dict[str, Any]:
    try:
        result = session.run(op)
    except MMError as error:
        return {"op": op["op"], "error": error.to_json()}
    return {"op": op["op"], "result": json.loads(json.dumps(result, ensure_ascii=False))}


def vector_files() -> list[Path]:
    return sorted(VECTORS.glob("*.json")) if VECTORS.is_dir() else []


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


INIT = {"op": "init"}
"""The pseudo-op of the session's start (its outcome is ``expected.init``)."""


class Run:
    """One vector against our session and, once a deviation changed what the session holds, against a model.

    The model (``tests/conformance_kinds.py``) replays the vector on a fresh session, doing what the
    reference did at each op a deviation with ``as_reference`` explained; from then on every later result
    and the final files are compared with the model's, so only what follows from the reference's own
    behaviour is explained.
    """

    def __init__(self, case: dict[str, Any], base: Path) -> None:
        self.case, self.base = case, base
        self.real = Session(case, base / "base")
        self.model: Session | None = None
        self.effects: dict[int, Deviation] = {}  # op index (-1: the start) → the deviation the model applies
        self.tol = bool(case.get("requires_fts5"))
        self.explained: list[str] = []  # ``op N: rule`` for each difference a deviation explained
        self.mismatches: list[str] = []

    def _step(self, session: Session, i: int, op: dict[str, Any]) -> dict[str, Any]:
        rule = self.effects.get(i)
        if i < 0:
            if rule is None or rule.as_reference is None:
                return dict(placeholders(session.setup(), session))
            try:
                rule.as_reference(self.case, session, op)
            except MMError as error:
                return dict(placeholders({"ok": False, "mode": self.case.get("config", {}).get("open", "ensure"),
                                          "error": error.to_json()}, session))
            raise AssertionError(f"{rule.name}: the reference's start as modelled did not fail")
        if rule is None or rule.as_reference is None:
            return outcome(session, op)
        effect = rule.as_reference
        return outcome(_Modelled(lambda: effect(self.case, session, op)), op)  # type: ignore[arg-type]

    def _replay(self, upto: int) -> Session:
        model = Session(self.case, self.base / f"model{len(self.effects)}")
        self._step(model, -1, INIT)
        for j, op in enumerate(self.case["ops"][:max(upto, 0)]):
            self._step(model, j, op)
        return model

    def check(self, i: int, op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> str | None:
        """A mismatch's description, or None when ``got`` is ``want`` or a deviation explains the difference."""
        ref = got if self.model is None else placeholders(self._step(self.model, i, op), self.model)
        if same(ref, want, self.tol):
            return None
        rule = explaining(self.case, op, ref, want)
        if rule is not None and rule.as_reference is not None:
            self.effects[i] = rule
            self.model = self._replay(i)
            ref = placeholders(self._step(self.model, i, op), self.model)
            if not same(ref, want, self.tol) and explained_by(self.case, op, ref, want) is None:
                return (f"op {i}: {rule.name} models the reference as\n   {json.dumps(ref, ensure_ascii=False)[:1500]}"
                        f"\n   want: {json.dumps(want, ensure_ascii=False)[:1500]}")
        if rule is not None:
            self.explained.append(f"op {i}: {rule.name}")
            return None
        return (f"op {i} {json.dumps(op, ensure_ascii=False)[:200]}\n"
                f"   got:  {json.dumps(ref, ensure_ascii=False)[:1500]}\n"
                f"   want: {json.dumps(want, ensure_ascii=False)[:1500]}")

    def final(self) -> Session:
        """The session whose files stand for the reference's at the end: the model's, once there is one."""
        return self.model or self.real


class _Modelled:
    """A session whose ``run`` does what the reference did (for :func:`outcome`)."""

    def __init__(self, effect: Any) -> None:
        self.effect = effect

    def run(self, op: dict[str, Any]) -> Any:
        return self.effect()


@pytest.mark.parametrize("path", vector_files() or [None], ids=lambda p: p.stem if p else "absent")
def test_vector(path: Path | None, tmp_path: Path) -> None:
    if path is None:
        pytest.skip(f"no conformance vectors at {VECTORS} (set MM_CONFORMANCE_DIR)")
    vector = _load(path)
    case, expected = vector["case"], vector["expected"]
    if case.get("requires_fts5") and not search.fts5_available():
        pytest.skip(f"{path.stem} requires SQLite FTS5, which this Python's sqlite3 lacks")
    mismatches = run_vector(case, expected, tmp_path).mismatches
    assert not mismatches, "\n".join(mismatches)


def run_vector(case: dict[str, Any], expected: dict[str, Any], base: Path) -> Run:
    """Our run of ``case`` against ``expected``: its ``mismatches`` (no deviation explains them; empty when it
    conforms) and which deviation ``explained`` each other difference."""
    run = Run(case, base)
    init = placeholders(run.real.setup(), run.real)
    for i, op, got, want in [(-1, INIT, init, expected["init"])]:
        run.mismatches += [m for m in [run.check(i, op, got, want)] if m]
    for i, (op, want) in enumerate(zip(case["ops"], expected["results"], strict=True)):
        run.mismatches += [m for m in [run.check(i, op, placeholders(outcome(run.real, op), run.real), want)] if m]
    session = run.final()
    if not has_crlf(case):
        files = files_as_reference(case, placeholders(session.files(), session), expected["files"])
        if same(files, expected["files"], False):
            pass
        elif rule := explained_by(case, {"op": "files"}, {"files": files}, {"files": expected["files"]}):
            run.explained.append(f"files: {rule}")
        else:
            run.mismatches.append(f"files:\n   got:  {json.dumps(files, ensure_ascii=False)[:3000]}\n"
                                  f"   want: {json.dumps(expected['files'], ensure_ascii=False)[:3000]}")
        if "dirs" in expected and session.dirs() != expected["dirs"]:
            run.mismatches.append(f"dirs: got {session.dirs()} want {expected['dirs']}")
    return run


def test_every_deviation_has_a_reason_and_an_existing_proof() -> None:
    import importlib

    for deviation in DEVIATIONS:
        module, function = deviation.proof.split("::")
        assert deviation.reason, deviation.name
        assert hasattr(importlib.import_module(f"tests.{module}"), function), deviation.proof


def test_the_cli_rules_explain_their_differences_and_nothing_else() -> None:
    """Synthetic results for the rules of issue 10: each explains its own difference and not an unrelated one."""
    cli = {"op": "cli", "args": ["read"]}
    case: dict[str, Any] = {"ops": [cli], "config": {"memoryId": "local"},
                            "setup_files": {"memories/x.md": "# Project Notes\n\nbody\n"}}
    bare: dict[str, Any] = {"ops": [], "config": {"memoryId": "local"}}
    not_root = {"result": {"exitCode": 1, "stdout": "", "stderr": "mmctl: E_NOT_INITIALIZED: no memory root at <ROOT> "
                           "(from --root): it does not exist; …\n", "json": None}}
    created = {"result": {"exitCode": 0, "stdout": "Memory index (0 entries…\n", "stderr": "", "json": None}}
    assert explained_by(case, cli, not_root, created) == "no-silent-roots"
    assert explained_by(case, {"op": "files"}, {"files": {}}, {"files": {"MEMORY.md": "# MEMORY.md\n"}}) \
        == "no-silent-roots"
    assert explained_by(case, {"op": "files"}, {"files": {"$HOME/r/.mmd/lock": ""}}, {"files": {}}) == "state-folders"
    helped = {"result": {"exitCode": 0, "stdout": "…\n  read      a note\n  write     create\n", "stderr": ""}}
    theirs = {"result": {"exitCode": 0, "stdout": "Usage:\n  dsh-memory read [topic]\n  dsh-memory write <t>\n"}}
    assert explained_by(case, {"op": "cli", "args": ["help"]}, helped, theirs) == "help-superset"
    path_err = {"error": {"code": "E_PARSE", "message": "/r/MEMORY.md: index line 3: bad heading"}}
    assert explained_by(case, {"op": "reload"}, path_err, {"error": {"code": "E_PARSE", "message": "index line 3: "
                                                                    "bad heading"}}) == "error-names-the-file"
    assert explained_by(case, {"op": "reload"}, path_err, {"error": {"code": "E_IO", "message": "x"}}) is None
    bad_title = {"name": "MemoryError", "code": "E_INVALID", "message": 'topic "Project Notes" is not a valid slug: '
                 "use letters, digits, '.', '_' and '-' (no separators, no leading separators)"}
    loaded = {"result": {"ok": True}}
    assert explained_by(case, {"op": "reload"}, loaded, {"error": bad_title}) == "unslug-title-anomaly"
    assert explained_by(case, {"op": "reload"}, {"result": {"ok": True}}, {"error": {"code": "E_PARSE"}}) is None
    newline = {"error": {"code": "E_INVALID", "details": "updated"}}
    assert explained_by(bare, {"op": "write", "updated": "a\nb"}, newline, {"result": {}}) == "updated-newline"
    refused = {"result": {"exitCode": 2, "stderr": "mmctl: search: argument --mode: invalid choice: 'x'\n"}}
    assert explained_by(bare, {"op": "cli", "args": ["search"]}, refused, created) \
        == "cli-refuses-what-the-reference-ignored"
    assert explained_by(bare, cli, {"result": {"exitCode": 1, "stderr": "mmctl: boom\n"}}, created) is None


def test_the_core_error_rule_explains_a_named_error_and_nothing_else() -> None:
    cli = {"op": "cli", "args": ["uri", "bad topic"]}
    case: dict[str, Any] = {"ops": [cli], "config": {"memoryId": "local"}}
    theirs = {"result": {"exitCode": 1, "stdout": "", "json": None,
                         "stderr": 'dsh-memory: internal error: MemoryError: topic "bad topic" is not a valid slug'}}
    ours = {"result": {"exitCode": 1, "stdout": "", "json": None, "stderr": 'mmctl: E_INVALID: topic "bad topic" is '
                       "not a valid slug\nmmctl: topics are ASCII slugs: letters, digits\n"}}
    assert explained_by(case, cli, ours, theirs) == "core-error-named"
    other = {"result": {**ours["result"], "stderr": "mmctl: E_INVALID: memoryId is bad\nmmctl: fix it\n"}}
    assert explained_by(case, cli, other, theirs) is None
    printed = {"result": {**ours["result"], "stdout": "mm://local/x\n"}}
    assert explained_by(case, cli, printed, theirs) is None


def test_the_agent_log_digest_rule_explains_only_a_recognised_agent_log() -> None:
    claude = (FIXTURES / "digest" / "claude-code-session.jsonl").read_text(encoding="utf-8")
    other = (FIXTURES / "ingest" / "other" / "agent-log.jsonl").read_text(encoding="utf-8")
    ours = {"result": {"exitCode": 0, "stdout": "digest from <ROOT>/s.jsonl (claude-code log) — 2 candidate(s)\n",
                       "stderr": "", "json": None}}
    theirs = {"result": {"exitCode": 0, "stdout": "digest from <ROOT>/s.jsonl — 4 candidate(s)\n", "stderr": ""}}
    for arg in (["--file", "<ROOT>/s.jsonl"], ["--file=<ROOT>/s.jsonl"]):
        op = {"op": "cli", "args": ["digest", *arg]}
        case: dict[str, Any] = {"ops": [op], "config": {"memoryId": "local"}, "setup_files": {"s.jsonl": claude}}
        assert explained_by(case, op, ours, theirs) == "digest-agent-log"
        assert explained_by({**case, "setup_files": {"s.jsonl": other}}, op, ours, theirs) is None
    written: dict[str, Any] = {"ops": [{"op": "write_file", "path": "$HOME/s.jsonl", "text": claude}],
                               "config": {"memoryId": "local"}}
    op = {"op": "cli", "args": ["digest", "--file", "<DSH_HOME>/s.jsonl"]}
    assert explained_by(written, op, ours, theirs) == "digest-agent-log"
    assert explained_by(written, op, {"result": {**ours["result"], "exitCode": 1}}, theirs) is None
