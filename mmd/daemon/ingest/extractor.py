"""The optional extractor command: once per ended session, the session's utterances in, candidates out.

Owns: :class:`Extractor` — ``[candidates] command`` run in a worker thread
(one at a time), with the session's utterances as one JSON object on stdin
and candidates as one JSON object on stdout (``schema/extractor.schema.json``),
within ``candidates.timeoutMs``, under the supervisor of :mod:`mmd.daemon.children`, which ends
everything the command started when its run ends, times out or the daemon stops (:func:`run_command`:
nothing it started outlives it, a detached ``setsid`` helper included). Its candidates (rule ``extractor``) go
through the same pipeline end as the built-in rules' (a note already holding
the statement drops it, a proposal is made) and the same queue (dedupe,
evidence, review). A session is run once (the ``extractors`` table of
state.db); a failure (exit status, timeout, output that is no candidate list)
is logged and counted in :meth:`Extractor.health`, shown by ``daemon.status``
under ``extractor``, and queues nothing. Issue 13 "Optional extractor command".

Never: runs a shell (the command is an argv list), passes the environment's
secrets on purpose (it inherits the daemon's environment, as a hook would),
names a log format (the source recorded with the file's cursor reads it), or
blocks the ingestion thread.
"""

from __future__ import annotations

import json
import logging
import os
import queue as queues
import select
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from mmd.candidates import Evidence, NewCandidate, Seen, make_candidate
from mmd.candidates.score import MIN_SCORE
from mmd.sources import SOURCES, Utterance
from mmd.sources.other import OtherSource

from ..children import CANNOT_RUN, end_supervisor, supervised
from ..queue import ReviewQueue
from .harvest import SLICE_BYTES, SLICE_CHARS, AddedBatch

__all__ = ["EXTRACTOR_KINDS", "MAX_CANDIDATES", "MAX_SESSION_CHARS", "Extractor", "ExtractorFailed", "ExtractorStopped",
           "run_command"]

log = logging.getLogger("mmd.ingest")

EXTRACTOR_KINDS = ("preference", "rule", "fact", "decision", "pitfall", "environment")
"""The kinds an extractor candidate may have (default ``fact``)."""
MAX_CANDIDATES = 200
"""Most candidates taken from one run (the rest are ignored, with a warning)."""
MAX_SESSION_CHARS = 4_000_000
"""Most utterance text (code points) handed to the command; a longer session is cut at an utterance."""
_DEFAULT_SCORE = 0.7
_STDOUT_MAX = 4 * 1024 * 1024


class ExtractorFailed(Exception):
    """One run went wrong (exit status, timeout, output); the message says how."""


class ExtractorStopped(Exception):
    """Raised by :func:`run_command` when the daemon stops during a run: the session is run again after a restart."""


class Extractor:
    """Runs the extractor command for ended sessions.

    Args:
        command: the argv (program first).
        timeout_ms: how long one run may take, milliseconds.
        queue: the review queue (its database records which sessions ran).
        seen: the notes as the candidate pipeline sees them now.
        write_budget: the default write budget, code points.
        on_added: called (in the worker thread) with the candidates a run added.
        now_iso: the clock, ISO-8601 UTC.
    """

    def __init__(self, command: Sequence[str], timeout_ms: int, queue: ReviewQueue, *, seen: Callable[[], Seen],
                 write_budget: Callable[[], int], on_added: Callable[[AddedBatch], None],
                 now_iso: Callable[[], str]) -> None:
        self.command = list(command)
        self.timeout_s = timeout_ms / 1000
        self.queue = queue
        self._seen = seen
        self._write_budget = write_budget
        self._on_added = on_added
        self._now_iso = now_iso
        self._jobs: queues.Queue[tuple[str | None, str] | None] = queues.Queue()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.runs = self.failures = self.added = 0
        self.last_error: str | None = None
        self.last_run_at: str | None = None

    def health(self) -> dict[str, Any]:
        """``{command, runs, failures, candidatesAdded, lastRunAt, lastError}`` for ``daemon.status``."""
        return {"command": list(self.command), "runs": self.runs, "failures": self.failures,
                "candidatesAdded": self.added, "lastRunAt": self.last_run_at, "lastError": self.last_error}

    def start(self) -> None:
        """Start the worker thread."""
        self._thread = threading.Thread(target=self._work, name="mmd-extractor", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the worker: a run under way is cut short (the command and all it started are ended, the session
        is run again after a restart); wait up to ``timeout_s`` seconds (blocking)."""
        self._stopping.set()
        self._jobs.put(None)
        if self._thread is not None:
            self._thread.join(timeout_s)

    def submit(self, session_id: str | None, path: str) -> None:
        """Queue one ended session (any thread)."""
        self._jobs.put((session_id, path))

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                self.run(*job)
            except Exception:  # noqa: BLE001 - a bug here must not end the worker
                log.exception("extractor.bug file=%s", job[1])

    def run(self, session_id: str | None, path: str) -> list[int]:
        """Run the command for one session (once); returns the ids it added.

        Raises:
            sqlite3.Error: if the queue cannot be written.
        """
        key = f"{session_id or ''}|{path}"
        conn = self.queue.db.conn()
        if conn.execute("SELECT 1 FROM extractors WHERE session = ?", (key,)).fetchone() is not None:
            return []
        started = self._now_iso()
        ids: list[int] = []
        try:
            utterances = self._utterances(path)
            items = self._call(self._payload(session_id, path, utterances))
            candidates = self._candidates(items, utterances, session_id, path)
            ids = self.queue.add(candidates)
        except ExtractorStopped:
            log.info("extractor.stopped file=%s session=%s: the daemon is stopping; run again at the next start",
                     path, session_id)
            return []
        except ExtractorFailed as failure:
            self.last_error = str(failure)
            self.failures += 1
            log.warning("extractor.failed file=%s session=%s: %s", path, session_id, failure)
            detail: dict[str, Any] = {"error": str(failure)}
        else:
            self.added += len(ids)
            detail = {"candidates": len(candidates)}
            log.info("extractor.done file=%s session=%s candidates=%d added=%d", path, session_id,
                     len(candidates), len(ids))
        self.last_run_at = started
        self.runs += 1  # last: a status showing the run shows its outcome too
        with conn:
            conn.execute("INSERT OR REPLACE INTO extractors (session, at, ok, added, detail) VALUES (?, ?, ?, ?, ?)",
                         (key, self._now_iso(), int("error" not in detail), len(ids), json.dumps(detail)))
        if ids:
            self._on_added(AddedBatch(ids, session_id, path))
        return ids

    def _utterances(self, path: str) -> list[Utterance]:
        row = self.queue.db.cursors().get(path)
        source = SOURCES.get(row.kind) if row is not None else None
        if source is None:
            raise ExtractorFailed(f"no source reads {path}")
        out: list[Utterance] = []
        cursor: dict[str, Any] | None = None
        size = 0
        try:
            while size < MAX_SESSION_CHARS:
                s = source.read(path, cursor, max_bytes=SLICE_BYTES, max_chars=SLICE_CHARS)
                for u in s.utterances:
                    size += len(u.text)
                    if size > MAX_SESSION_CHARS:
                        break
                    out.append(u)
                cursor = s.cursor
                if not s.more:
                    break
        except OSError as error:
            raise ExtractorFailed(f"cannot read {path}: {error}") from None
        return out

    @staticmethod
    def _payload(session_id: str | None, path: str, utterances: Sequence[Utterance]) -> bytes:
        first = utterances[0] if utterances else None
        data = {"version": 1, "agent": first.agent if first else OtherSource.name, "sessionId": session_id,
                "project": next((u.project for u in utterances if u.project), None), "file": path,
                "utterances": [{"index": i, "who": u.who, "text": u.text, "at": u.at,
                                "position": u.position.to_json()} for i, u in enumerate(utterances)]}
        return json.dumps(data, ensure_ascii=False).encode()

    def _call(self, payload: bytes) -> list[Any]:
        """Run the command; the ``candidates`` list it printed."""
        stdout = run_command(self.command, payload, self.timeout_s, _STDOUT_MAX, self._stopping)
        try:
            out = json.loads(stdout)
        except (UnicodeDecodeError, ValueError):
            raise ExtractorFailed("stdout is not one JSON object") from None
        if not isinstance(out, dict) or not isinstance(out.get("candidates"), list):
            raise ExtractorFailed('stdout has no "candidates" list')
        items: list[Any] = out["candidates"]
        if len(items) > MAX_CANDIDATES:
            log.warning("extractor.too_many candidates=%d kept=%d", len(items), MAX_CANDIDATES)
        return items[:MAX_CANDIDATES]

    def _candidates(self, items: list[Any], utterances: Sequence[Utterance], session_id: str | None,
                    path: str) -> list[NewCandidate]:
        seen, budget = self._seen(), self._write_budget()
        out: list[NewCandidate] = []
        skipped = 0
        for item in items:
            made = _one(item, utterances, session_id, path, seen, budget)
            if made is None:
                skipped += 1
            elif isinstance(made, NewCandidate):
                out.append(made)
        if skipped:
            log.warning("extractor.skipped file=%s items=%d (not a candidate: see schema/extractor.schema.json)",
                        path, skipped)
        return out


def _one(item: Any, utterances: Sequence[Utterance], session_id: str | None, path: str, seen: Seen,
         budget: int) -> NewCandidate | None | bool:
    """One printed item as a candidate; None when it is malformed, False when a note already holds it."""
    if not isinstance(item, dict) or not isinstance(item.get("body"), str) or not item["body"].strip():
        return None
    kind = item.get("kind", "fact")
    score = item.get("score", _DEFAULT_SCORE)
    at = item.get("utterance")
    fields_ok = (kind in EXTRACTOR_KINDS and isinstance(score, (int, float)) and not isinstance(score, bool)
                 and 0 <= score <= 2 and all(isinstance(item.get(k, ""), str) for k in ("summary", "topic", "quote"))
                 and (at is None or isinstance(at, int) and not isinstance(at, bool) and 0 <= at < len(utterances)))
    if not fields_ok:
        return None
    quote = item.get("quote") or item["body"]
    if at is not None:
        evidence = Evidence.of(utterances[at], quote)
    else:
        first = utterances[0] if utterances else None
        evidence = Evidence(first.agent if first else OtherSource.name, session_id,
                            first.project if first else None, path, {"file": path}, None, "text", quote[:500])
    topic = item.get("topic") or None
    made = make_candidate(seen, kind=kind, rule="extractor", body=item["body"], summary=item.get("summary") or "",
                          score=float(score), visible=float(score) >= MIN_SCORE, evidence=[evidence],
                          write_budget=budget, topic=topic if topic and _is_slug(topic) else None)
    return False if made is None else made


def _is_slug(topic: str) -> bool:
    from mmd.core.text import TOPIC_MAX_LENGTH, TOPIC_RE

    return len(topic) <= TOPIC_MAX_LENGTH and TOPIC_RE.fullmatch(topic) is not None


def run_command(command: Sequence[str], payload: bytes, timeout_s: float, max_stdout: int,
                stop: threading.Event | None = None) -> bytes:
    """Run ``command`` (an argv, no shell) with ``payload`` on stdin; what it printed on stdout.

    It runs under the supervisor of :mod:`mmd.daemon.children`, in a session of its own: when it ends,
    fails, runs out of time or ``stop`` is set, everything it started is ended, a helper that left its
    process group with ``setsid`` included (on Linux; see that module for macOS), and one still holding
    stdout does not hold the run up once the command itself has exited. Stdout is read as it comes and
    refused past ``max_stdout`` bytes (never held whole); stdin and stderr are temporary files (only
    stderr's last line is kept, for the message).

    Raises:
        ExtractorFailed: "timed out after N s", "exit status N: <stderr's last line>",
            "printed more than N bytes", "cannot run <program>: <why>".
        ExtractorStopped: ``stop`` was set (the daemon is stopping) before the command ended.
    """
    deadline = time.monotonic() + timeout_s
    # plain blocking I/O, not aiofiles: this runs on the extractor's own thread (mmd-extractor), never on the
    # event loop, and the child reads its stdin from a real file descriptor
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stderr:
        stdin.write(payload)
        stdin.seek(0)
        try:
            proc = subprocess.Popen(supervised(command), stdin=stdin, stdout=subprocess.PIPE, stderr=stderr,
                                    start_new_session=True)
        except OSError as error:
            raise ExtractorFailed(f"cannot run {command[0]}: {error.strerror or error}") from None
        assert proc.stdout is not None
        try:
            out = _read_until_exit(proc, deadline, max_stdout, timeout_s, stop)
        finally:
            end_supervisor(proc)
            proc.stdout.close()
        if proc.returncode != 0:
            stderr.seek(max(0, stderr.seek(0, os.SEEK_END) - 4096))
            tail = stderr.read().decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            if proc.returncode == 127 and tail[0].startswith(CANNOT_RUN):
                raise ExtractorFailed(tail[0][len(CANNOT_RUN) - len("cannot run "):])
            raise ExtractorFailed(f"exit status {proc.returncode}: {tail[0][:200]}")
        return out


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, without reaping it where the OS can say so (``waitid`` with ``WNOWAIT``; not
    on macOS, where it is reaped): its pid, and so its process group's id, stay taken until the group has been
    killed (no other group can be given that id meanwhile)."""
    if hasattr(os, "waitid"):
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    return proc.poll() is not None


def _read_until_exit(proc: subprocess.Popen[bytes], deadline: float, max_stdout: int, timeout_s: float,
                     stop: threading.Event | None) -> bytes:
    """Stdout until EOF, or until the command has exited and nothing more is waiting in the pipe."""
    assert proc.stdout is not None
    fd, size = proc.stdout.fileno(), 0
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ExtractorFailed(f"timed out after {timeout_s:g} s")
        if stop is not None and stop.is_set():
            raise ExtractorStopped("the daemon is stopping")
        exited = _exited(proc)
        ready, _, _ = select.select([fd], [], [], 0 if exited else min(left, 0.2))
        if not ready:
            if exited:
                return b"".join(chunks)
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_stdout:
            raise ExtractorFailed(f"printed more than {max_stdout} bytes")
        chunks.append(chunk)
