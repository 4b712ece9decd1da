"""The review date survives the TypeScript reference's writes (issue 14: "store it spec-legally").

mmd stores a review date as the index entry line ``- **review-after:** YYYY-MM-DD``.
mm v1 §3 keeps unknown entry lines verbatim as the entry body, so the reference
(``JohnXu22786/memory-standard``) must carry the line through its own writes and
deletes. These tests run the real reference: set ``MM_REF_DIR`` to a built
checkout (``npm install && npm run build``: ``$MM_REF_DIR/lib/core/memory.js``
must exist) and have ``node`` on PATH; otherwise they skip, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from mmd.core import Memory, MemoryOptions
from mmd.inject.due import due_topics

REF_DIR = os.environ.get("MM_REF_DIR", "")
REF_MEMORY = Path(REF_DIR, "lib", "core", "memory.js") if REF_DIR else None
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    REF_MEMORY is None or not REF_MEMORY.is_file() or NODE is None,
    reason="the TypeScript reference is not built here: set MM_REF_DIR to a built memory-standard checkout "
           "(lib/core/memory.js) and put node on PATH",
)

_SCRIPT = """
const { Memory } = await import(process.env.REF_MEMORY_URL)
const ops = JSON.parse(process.env.REF_OPS)
const memory = Memory.ensure({ root: process.env.REF_ROOT, now: () => new Date('2026-05-01T00:00:00.000Z') })
const results = []
for (const op of ops) {
  if (op.op === 'write') results.push(memory.write(op.args))
  else if (op.op === 'delete') results.push(memory.delete(op.topic))
  else if (op.op === 'read') { memory.reload(); results.push(memory.readIndex()) }
}
process.stdout.write(JSON.stringify(results))
"""


def reference(root: Path, *ops: dict[str, Any]) -> list[dict[str, Any]]:
    """Run ``ops`` through the reference's ``Memory`` on ``root`` in a real node process."""
    assert REF_MEMORY is not None and NODE is not None
    env = {**os.environ, "REF_MEMORY_URL": REF_MEMORY.resolve().as_uri(), "REF_OPS": json.dumps(list(ops)),
           "REF_ROOT": str(root), "DSH_HOME": str(root.parent / "home")}
    done = subprocess.run([NODE, "--input-type=module", "-e", _SCRIPT], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


def mmd_memory(root: Path) -> Memory:
    options = MemoryOptions.create(root=root, env={"DSH_HOME": str(root.parent / "home")})
    return Memory.ensure(options, now=lambda: datetime(2026, 1, 31, tzinfo=UTC), fts5=False)


def review_dates(root: Path) -> dict[str, str | None]:
    memory = mmd_memory(root)
    return {e.topic: e.review_after for e in memory.snapshot.entries}


def test_a_reference_write_and_delete_of_other_topics_keep_the_review_date(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = mmd_memory(root)
    assert memory.write("deploy", "Deploy to eu-west-1.", summary="where", review_after="2027-03-01")["ok"]
    assert memory.write("doomed", "to be deleted")["ok"]
    results = reference(root, {"op": "write", "args": {"topic": "other", "content": "written by the reference"}},
                        {"op": "delete", "topic": "doomed"}, {"op": "read"})
    assert results[0]["ok"] is True and results[1]["ok"] is True
    deploy = next(e for e in results[2]["entries"] if e["topic"] == "deploy")
    assert deploy["entryBody"] == "- **review-after:** 2027-03-01"  # the reference reads it as entry body
    assert review_dates(root) == {"deploy": "2027-03-01", "other": None}
    entries = mmd_memory(root).snapshot.entries
    assert [d.topic for d in due_topics(entries, date(2027, 3, 1)).due] == ["deploy"]


def test_a_reference_rewrite_of_the_same_topic_keeps_it_too(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = mmd_memory(root)
    assert memory.write("deploy", "old text", review_after="3m")["ok"]
    results = reference(root, {"op": "write", "args": {"topic": "deploy", "content": "new text", "summary": "s"}})
    assert results[0]["action"] == "updated"
    assert review_dates(root) == {"deploy": "2026-04-30"}
    note = mmd_memory(root).read_topic("deploy")
    assert note is not None and note.body == "new text"
