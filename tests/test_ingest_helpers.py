"""Helpers for the ingestion and review-queue tests: sample copies, zstd logs, RPC calls, waiting.

The expected candidates of the shared sample logs are written out in
``tests/fixtures/ingest/samples_expected.json`` (one list per sample, in log
order). This module holds no tests of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zstandard

from tests.conftest import shared_path
from tests.test_daemon_helpers import DaemonProcess, sync_call

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ingest"
SAMPLES_EXPECTED: dict[str, list[dict[str, Any]]] = json.loads(
    (FIXTURES / "samples_expected.json").read_text(encoding="utf-8"))
"""``{sample path relative to the sessions folder: [candidate without id/status/times/file], …}``."""
INFRA = "--Users-mei-src-infra--/session-5a1e8c3d-7b20-4c9e-a6f1-0d8b3e2c9f57/session.jsonl"
PAYMENTS = "--home-dev-work-payments-api--/session-3f9c2a71-5b8e-4d0a-9c61-2e7f4b8d1a05/session.v4.jsonl"
SEEDED = "--dsh-workspace--/preview-architecture-review/session.v3.jsonl"
LEGACY = "_no-cwd/legacy-sdk-history/session.v4.jsonl"
DECOYS = (
    "Never run `terraform apply` without `-target` review",  # infra: AGENTS.md injected as agent-instructions
    "Recommend pinning",  # infra: reasoning (and its reasoning-chunks rows)
    "Working directory: /Users/mei/src/infra",  # infra: the v0 system prompt in request/header
    "must be replaced",  # infra: tool output
    "This is an automatically generated checkpoint",  # the compaction checkpoint (its summary is read once)
    "suspect the retry path regenerates the key",  # payments: MEMO inside reasoning
    "mask_pan()",  # payments: REMEMBER inside injected AGENTS.md
    "Stripe sandbox quota is shared with the staging team",  # payments: dsh-memory-delta injection
    "Prefer `read` before `edit`",  # payments: the v4 system/message
    "Current runtime context",  # payments: runtime-context injection
    # "mm: changelog entries go under …" is no mm v1 URI, but the person marked it on purpose: a candidate
    # since issue 13 (one of "both of the user's explicit mm: lines")
    "History checkpoint",  # seeded v3: the inherited prefix
)
"""Text in the samples that must never reach the queue (injected context, reasoning, tools, inherited turns)."""


def copy_samples(dest: Path) -> Path:
    """Writable copy of ``../shared/sessions`` at ``dest`` (a visible skip when it is absent)."""
    src = shared_path("sessions")
    for dirpath, _dirs, files in os.walk(src):
        target = dest / Path(dirpath).relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.copyfile(Path(dirpath) / name, target / name)
    return dest


def zstd_frames(lines: list[bytes], per_frame: int = 5) -> list[bytes]:
    """A DSH zstd log's frames: the header line alone, then one frame per batch of ``per_frame`` lines."""
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    frames = [cctx.compress(lines[0])]
    for i in range(1, len(lines), per_frame):
        frames.append(cctx.compress(b"".join(lines[i:i + per_frame])))
    return frames


def call(daemon: DaemonProcess, method: str, params: dict[str, Any] | None = None) -> Any:
    """The result of one call; AssertionError with the error object on a JSON-RPC error."""
    answer = sync_call(daemon.rpc, method, params)
    assert "error" not in answer, answer["error"]
    return answer["result"]


def error_code(daemon: DaemonProcess, method: str, params: dict[str, Any]) -> str:
    """The ``data.code`` of a call expected to fail."""
    answer = sync_call(daemon.rpc, method, params)
    assert "error" in answer, answer
    return str(answer["error"]["data"]["code"])


def wait_until(pred: Callable[[], Any], timeout_s: float = 10.0, what: str = "condition") -> Any:
    """Poll ``pred`` every 20 ms until it returns something truthy; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.02)


def status(daemon: DaemonProcess) -> dict[str, Any]:
    return dict(call(daemon, "daemon.status"))


def backfilled(daemon: DaemonProcess, timeout_s: float = 10.0) -> dict[str, Any]:
    """``daemon.status`` once the backfill finished and the watch is on."""
    return dict(wait_until(lambda: (s := status(daemon))["ingest"]["backfill"]["done"]
                           and s["ingest"]["phase"] == "following" and s, timeout_s, "the backfill"))


def candidates(daemon: DaemonProcess, status_filter: str = "all") -> list[dict[str, Any]]:
    """Every candidate with that status (hidden ones too), oldest first (pending: highest score first)."""
    out: list[dict[str, Any]] = []
    while True:
        page = call(daemon, "queue.list", {"status": status_filter, "all": True, "limit": 1000,
                                           "offset": len(out)})
        out.extend(page["candidates"])
        if len(out) >= page["total"] or not page["candidates"]:
            return out


def comparable(candidate: dict[str, Any]) -> dict[str, Any]:
    """A candidate without what depends on the run (id, status, times, file path, evidence paths)."""
    source = {k: v for k, v in candidate["source"].items() if k != "file"}
    keep = ("kind", "rule", "score", "seen", "visible", "pinned", "topic", "proposal", "summary", "body", "chars",
            "overBudget", "speaker", "flags")
    evidence = [{k: v for k, v in e.items() if k not in ("file", "position")} for e in candidate["evidence"]]
    return {**{k: candidate[k] for k in keep}, "source": source, "evidence": evidence}


def expected_in_scan_order(folder: Path, names: list[str] | None = None) -> list[dict[str, Any]]:
    """The expected candidates of the samples copied to ``folder`` in backfill order (newest file first, then
    by path)."""
    def newest_first(name: str) -> tuple[int, str]:
        return -(folder / name).stat().st_mtime_ns, str(folder / name)

    return [c for name in sorted(names or SAMPLES_EXPECTED, key=newest_first) for c in SAMPLES_EXPECTED[name]]


def dsh_line(seq: int, etype: str, data: dict[str, Any]) -> bytes:
    """One live-written DSH event line."""
    return (json.dumps({"type": etype, "seq": seq, "time": 1791383800000 + seq, "data": data},
                       ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def user_message(seq: int, text: str, mid: str) -> bytes:
    """A human prompt (``user/message`` with ``source.kind == "user"``)."""
    return dsh_line(seq, "user/message", {"content": [{"type": "text", "text": text}], "source": {"kind": "user"},
                                          "role": "user", "id": mid})
