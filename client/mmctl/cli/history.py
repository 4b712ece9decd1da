"""``mmctl log|diff|revert|restore|sync``: the root's history and sync.

``log`` and ``restore`` work on every root: a daemon run with ``--git`` answers from the git
history (a project root's commits, topics and ``rN`` its own: ``--project``), any other daemon
and ``mmctl`` alone from the version history every write keeps (``.mmd/versions.db``, issue 29);
``diff``, ``revert`` and ``sync`` need a daemon run with ``--git`` (``sync`` syncs every root of
the home at once). REV is a revision ``r42`` of THIS root, a kept version ``v17`` (``log`` lists them),
or a commit (any commit-ish git knows; revision numbers are per root: another machine's ``r42``
is named by its commit hash; ``log`` prints the hash beside each and marks other roots'
commits). A revert or a restore is a new write under every budget, never a history rewrite.
``sync`` returns once commit, fetch, merge, push and the daemon's reload are done, and says what
happened; while it waits it says on stderr what for (the fetch from, or the push to, the remote, and
how long), and a sync started while another runs returns at once saying so (``E_BUSY``). Text output
is for people;
``--json`` prints the daemon's ``memory.*`` value as one line of JSON.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from mmd.wire.methods import DAEMON_STATUS, MEMORY_DIFF, MEMORY_LOG, MEMORY_RESTORE, MEMORY_REVERT, MEMORY_SYNC

from .output import EXIT_FAILED, EXIT_OK, Ctx
from .parser import UsageError

__all__ = ["cmd_diff", "cmd_log", "cmd_restore", "cmd_revert", "cmd_sync"]

READ_TIMEOUT_MS = 30_000
"""How long ``log`` and ``diff`` wait for the daemon, milliseconds."""
WRITE_TIMEOUT_MS = 60_000
"""How long ``revert`` and ``restore`` wait (they are writes: never resent), milliseconds."""
SYNC_TIMEOUT_MS = 600_000
"""How long ``sync`` waits: a fetch and a push may each take the network timeout, milliseconds."""
SYNC_POLL_S = 0.5
"""How often ``sync`` asks the daemon which step its sync is at, seconds."""
STILL_WAITING_S = 10.0
"""How often ``sync`` says it still waits for the same fetch or push, seconds."""
SHOWN = 5
"""Most topics or candidate ids ``sync`` names on a line; the count says how many there are."""


def _call(ctx: Ctx, command: str, method: str, params: dict[str, Any], timeout_ms: int) -> Any:
    client = ctx.need_daemon(command).client
    return client.call(method, {k: v for k, v in params.items() if v is not None}, timeout_ms=timeout_ms)


def _direct_or(ctx: Ctx, method: str, params: dict[str, Any], timeout_ms: int) -> Any | None:
    """The daemon's answer when one owns the root, else None (the caller reads the version history itself)."""
    ctx.need_root()
    daemon = ctx.daemon()
    if daemon is None:
        return None
    return daemon.client.call(method, {k: v for k, v in params.items() if v is not None}, timeout_ms=timeout_ms)


def cmd_log(ctx: Ctx) -> int:
    """``log [TOPIC] [--limit N]``: the kept versions (a ``--git`` daemon's commits) of TOPIC or the root, newest
    first."""
    topic = ctx.rest[0] if ctx.rest else None
    limit = ctx.args.integer("--limit")
    result = _direct_or(ctx, MEMORY_LOG.name, {"topic": topic, "limit": limit}, READ_TIMEOUT_MS)
    if result is None:
        from mmd.core.text import validate_topic

        if topic is not None:
            validate_topic(topic)
        found = ctx.direct().memory().store.versions.log(topic, limit or 100)
        result = {"commits": [v.to_commit() for v in found]}
    if ctx.json:
        ctx.print_json(result)
        return EXIT_OK
    commits = result.get("commits", [])
    if not commits:
        ctx.write(f"no {'version of ' + topic if topic else 'version'} is kept yet\n")
        if topic is not None:
            _elsewhere(ctx, topic)
    for c in commits:
        label = "-" if c.get("otherRoot") else ",".join(f"r{n}" for n in c["revisions"]) or "-"
        mark = "  (other root: use the hash)" if c.get("otherRoot") else ""
        size = "" if "chars" not in c else "  (deleted)" if c.get("deleted") else f"  ({c['chars']} chars)"
        kept = "  [allowed: " + ", ".join(s["kind"] for s in c["allowed"].get("secrets", [])) + \
            ("hidden text" if c["allowed"].get("hidden") else "") + "]" if c.get("allowed") else ""
        ctx.write(f"{label:<6} {c['commit'][:12]}  {c['date']}  {c['subject']}{size}{kept}{mark}\n")
    return EXIT_OK


def _elsewhere(ctx: Ctx, topic: str) -> None:
    """On stderr, the way to TOPIC's history when the scope's own root has no such note and a root its reads see
    (the user root behind a project) has it: ``read`` falls through to that root, ``log`` names it."""
    scope = ctx.scope()
    if not scope.is_project:
        return
    memories = ctx.memories()  # the project's own root (absent until its first write), then the user root
    if any(label == scope.label and memory.read_topic(topic) is not None for label, memory in memories):
        return
    if any(label == "user" and memory.read_topic(topic) is not None for label, memory in memories):
        ctx.error(f"{topic} is a note of the user root, not of project {scope.label}: mmctl log {topic} --user")


def cmd_diff(ctx: Ctx) -> int:
    """``diff REV [REV]``: what REV changed, or what changed between two revisions."""
    if not ctx.rest:
        raise UsageError("diff requires a revision: a commit or r42 (see `mmctl log`)")
    revs = ctx.rest[:2]
    result = _call(ctx, "diff", MEMORY_DIFF.name, {"rev": revs[0], "other": revs[1] if len(revs) > 1 else None},
                   READ_TIMEOUT_MS)
    if ctx.json:
        ctx.print_json(result)
        return EXIT_OK
    signs = {"added": "+", "updated": "~", "removed": "-"}
    older = (result.get("from") or "(nothing)")[:10]
    ctx.write(f"{older}..{result['to'][:10]}: {len(result['topics'])} topic(s) changed\n")
    for row in result["topics"]:
        ctx.write(f"  {signs.get(row['change'], '?')} {row['topic']}\n")
    if result.get("patch"):
        ctx.write("\n" + result["patch"] + ("" if result["patch"].endswith("\n") else "\n"))
    return EXIT_OK


def _step(step: dict[str, Any]) -> str:
    outcome = step.get("outcome") or {}
    later = " (it had changed since: that later version stays in the history)" if step.get("changedSince") else ""
    if step["action"] == "delete":
        done = "deleted" if outcome.get("removed") else "already absent"
        return f"{done} {step['topic']}: it did not exist before (revision {outcome.get('revision')}){later}"
    if outcome.get("ok"):
        return f"wrote {step['topic']} back (revision {outcome.get('revision')}){later}"
    return f"NOT written: {step['topic']}: {outcome.get('message', 'the write was refused')}"


def cmd_revert(ctx: Ctx) -> int:
    """``revert REV``: write back each topic REV changed as it was before it (new writes, budgets hold)."""
    if len(ctx.rest) != 1:
        raise UsageError("revert takes one revision: a commit or r42 (see `mmctl log`)")
    result = _call(ctx, "revert", MEMORY_REVERT.name, {"rev": ctx.rest[0]}, WRITE_TIMEOUT_MS)
    if ctx.json:
        ctx.print_json(result)
    else:
        gone = [s["topic"] for s in result["results"] if s["action"] == "delete"]
        deletes = f"; it deletes {', '.join(gone)} (created by it)" if gone else ""
        ctx.write(f"revert of {result['rev']} ({result['commit'][:12]}): undoing what it changed{deletes}\n")
        for step in result["results"]:
            ctx.write("  " + _step(step) + "\n")
        if not result["results"]:
            ctx.write("  it changed no topic: nothing to write\n")
    return EXIT_OK if result.get("ok") else EXIT_FAILED


def cmd_restore(ctx: Ctx) -> int:
    """``restore TOPIC --at REV``: write TOPIC back as it was at REV; refused (exit 1) if it did not exist then."""
    at = ctx.args.text("--at")
    if len(ctx.rest) != 1 or at is None:
        raise UsageError("restore takes a topic and --at REV (r42, a version v17 or a commit)")
    result = _direct_or(ctx, MEMORY_RESTORE.name, {"topic": ctx.rest[0], "at": at}, WRITE_TIMEOUT_MS)
    if result is None:
        result = _restore_directly(ctx, ctx.rest[0], at)
    if ctx.json:
        ctx.print_json(result)
    else:
        ctx.write(f"restore of {result['topic']} at {result['at']} ({result['commit'][:10]}): "
                  + _step({**result, "changedSince": False}) + "\n")
    return EXIT_OK if result.get("ok") else EXIT_FAILED


def _root_words(scope: str) -> str:
    """``the user root``, or ``the project root <key>``."""
    return "the user root" if scope == "user" else f"the project root {scope}"


def _few(items: list[Any]) -> str:
    """The first :data:`SHOWN` of ``items``, then how many more."""
    named = ", ".join(str(i) for i in items[:SHOWN])
    return named + (f" … and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _restore_directly(ctx: Ctx, topic: str, at: str) -> dict[str, Any]:
    """``memory.restore``'s answer, made on the files from the version history (no daemon owns the root).

    Raises:
        Failure: when no version is kept at ``at`` (or it deleted the topic). MMError: as the write.
    """
    from mmd.core.revision_mark import read_mark
    from mmd.core.text import validate_topic
    from mmd.core.versions import restoring

    from .output import Failure

    validate_topic(topic)
    memory = ctx.direct().memory()
    version = memory.store.versions.at(topic, at)
    try:
        write = restoring(version, topic, at, read_mark(memory.root))
    except LookupError as missing:
        raise Failure(str(missing)) from None
    assert version is not None
    outcome = memory.write(topic, write.pop("content"), **write)
    return {"ok": bool(outcome.get("ok")), "topic": topic, "at": at, "commit": version.ref, "action": "write",
            "outcome": {**outcome, "revision": read_mark(memory.root)}, "revision": read_mark(memory.root)}


def sync_lines(result: dict[str, Any]) -> list[str]:
    """What a ``memory.sync`` result says, one step a line (commit, fetch, merge, push, conflicts); lists of
    topics and candidates are cut to a few names and their count."""
    where = f"{result['remote']}/{result['branch']}"
    lines = [f"commit: {result['committed'][:10]}" if result.get("committed") else "commit: nothing new"]
    if result.get("note"):
        lines.append(result["note"])
    if result.get("fetched"):
        lines.append(f"fetch: {where}")
    merged = result.get("merged", "none")
    topics = result.get("topics") or []
    lines.append(f"merge: {merged}" + (f" ({len(topics)} topic(s): {_few(topics)})" if topics else ""))
    refused = result.get("refused")
    if refused:
        what = "nothing of it was written" if refused["kind"] == "contain" else \
            f"the root stays as it was; its {refused['count']} topic(s) are review candidates"
        lines.append(f"refused: {refused['remote']} at {refused['commit'][:12]}: {what}; nothing was pushed")
    if result.get("pushed"):
        lines.append(f"push: {where} at {str(result.get('head'))[:10]}")
    conflicts = result.get("conflicts", [])
    for conflict in conflicts[:SHOWN]:
        scope = conflict.get("scope") or "user"
        named = conflict.get("path") or (conflict["topic"] if scope == "user" else f"{scope}/{conflict['topic']}")
        lines.append(f"conflict: {named} changed on both sides, {conflict.get('kept')} kept")
    if len(conflicts) > SHOWN:
        lines.append(f"conflict: … and {len(conflicts) - SHOWN} more")
    if result.get("queued"):
        queued = result["queued"]
        lines.append(f"queued: {len(queued)} candidate(s), {_few(queued)} (`mmctl queue show ID`)")
    if result.get("indexOverBudget"):
        roots = ", ".join(_root_words(s) for s in result.get("overBudget") or []) or "the root"
        lines.append(f"the merged MEMORY.md of {roots} is over its caps: consolidate it (writes are refused until "
                     "it fits)")
    if result.get("ahead") is not None:
        stale = " as of the last fetch that worked" if (result.get("error") or {}).get("stage") == "fetch" else ""
        lines.append(f"now {result['ahead']} ahead, {result['behind']} behind {where}{stale}; "
                     f"revision {result['revision']}")
    return lines


class _Waiting(threading.Thread):
    """While ``sync`` waits for its answer: asks the daemon (on a client of its own) which step its sync is at,
    and says on stderr when a fetch or a push starts and, every :data:`STILL_WAITING_S`, that it still waits."""

    def __init__(self, ctx: Ctx) -> None:
        super().__init__(name="mmctl-sync-waiting", daemon=True)
        self.ctx = ctx
        daemon = ctx.need_daemon("sync").client
        self.target, self.curve = daemon.target, daemon.curve
        self.done = threading.Event()

    def run(self) -> None:
        from ..client import Client
        from ..errors import MmctlError

        seen: tuple[str, str] | None = None
        started = told = 0.0
        with Client(endpoint=self.target.rpc, pub_endpoint=self.target.pub, env=self.ctx.env,
                    curve=self.curve) as client:
            while not self.done.wait(SYNC_POLL_S):
                try:
                    status = client.call(DAEMON_STATUS.name, timeout_ms=2_000) or {}
                    running = (status.get("git") or {}).get("syncing")
                except MmctlError:
                    continue
                if self.done.is_set() or not running or running.get("stage") not in ("fetch", "push"):
                    continue
                now, step = time.monotonic(), (str(running["stage"]), str(running.get("stageSince")))
                word = "waiting for the fetch from" if step[0] == "fetch" else "waiting for the push to"
                if step != seen:
                    seen, started, told = step, now, now
                    self.ctx.error(f"{step[0]}: {word} {running.get('remote')} …")
                elif now - told >= STILL_WAITING_S:
                    told = now
                    self.ctx.error(f"{step[0]}: still {word} {running.get('remote')} after {now - started:.0f} s "
                                   f"(it gives up after {int(running.get('timeoutMs') or 0) // 1000} s)")


def cmd_sync(ctx: Ctx) -> int:
    """``sync``: commit, fetch, merge by topic, push and reload now; prints each step (text: and, on stderr,
    what a fetch or push waits for while it waits). Another sync under way: refused at once (``E_BUSY``)."""
    waiting = None if ctx.json else _Waiting(ctx)
    if waiting is not None:
        waiting.start()
    try:
        result = _call(ctx, "sync", MEMORY_SYNC.name, {}, SYNC_TIMEOUT_MS)
    finally:
        if waiting is not None:
            waiting.done.set()
            waiting.join(2.5)
    if ctx.json:
        ctx.print_json(result)
    else:
        ctx.write("".join(line + "\n" for line in sync_lines(result)))
    if result.get("error"):
        if not ctx.json:
            later = "" if result.get("refused") else "; the daemon retries with back-off"
            ctx.error(f"sync failed at {result['error']['stage']}: {result['error']['message'].strip()} "
                      f"(no local revision is lost{later})")
        return EXIT_FAILED
    return EXIT_OK
