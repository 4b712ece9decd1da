"""``mmctl log|diff|revert|restore|sync``: the root's git history and sync (need a daemon run with ``--git``).

REV is a commit (any commit-ish git knows) or a revision ``r42`` of THIS root
(revision numbers are per root: another machine's ``r42`` is named by its commit
hash; ``log`` prints the hash beside each and marks other roots' commits). A revert
or a restore is a new write through the daemon under every budget, never a
history rewrite. ``sync`` returns once commit, fetch, merge, push and the
daemon's reload are done, and says what happened. Text output is for people;
``--json`` prints the daemon's ``memory.*`` value as one line of JSON.
"""

from __future__ import annotations

from typing import Any

from mmd.wire.methods import MEMORY_DIFF, MEMORY_LOG, MEMORY_RESTORE, MEMORY_REVERT, MEMORY_SYNC

from .output import EXIT_FAILED, EXIT_OK, Ctx
from .parser import UsageError

__all__ = ["cmd_diff", "cmd_log", "cmd_restore", "cmd_revert", "cmd_sync"]

READ_TIMEOUT_MS = 30_000
"""How long ``log`` and ``diff`` wait for the daemon, milliseconds."""
WRITE_TIMEOUT_MS = 60_000
"""How long ``revert`` and ``restore`` wait (they are writes: never resent), milliseconds."""
SYNC_TIMEOUT_MS = 600_000
"""How long ``sync`` waits: a fetch and a push may each take the network timeout, milliseconds."""


def _call(ctx: Ctx, command: str, method: str, params: dict[str, Any], timeout_ms: int) -> Any:
    client = ctx.need_daemon(command).client
    return client.call(method, {k: v for k, v in params.items() if v is not None}, timeout_ms=timeout_ms)


def cmd_log(ctx: Ctx) -> int:
    """``log [TOPIC] [--limit N]``: the commits of the root (touching TOPIC), newest first."""
    topic = ctx.rest[0] if ctx.rest else None
    result = _call(ctx, "log", MEMORY_LOG.name, {"topic": topic, "limit": ctx.args.integer("--limit")}, READ_TIMEOUT_MS)
    if ctx.json:
        ctx.print_json(result)
        return EXIT_OK
    commits = result.get("commits", [])
    if not commits:
        ctx.write(f"no commit{' touches ' + topic if topic else ' yet'}\n")
    for c in commits:
        label = "-" if c.get("otherRoot") else ",".join(f"r{n}" for n in c["revisions"]) or "-"
        mark = "  (other root: use the hash)" if c.get("otherRoot") else ""
        ctx.write(f"{label:<6} {c['commit'][:12]}  {c['date']}  {c['subject']}{mark}\n")
    return EXIT_OK


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
        raise UsageError("restore takes a topic and --at REV (a commit or r42)")
    result = _call(ctx, "restore", MEMORY_RESTORE.name, {"topic": ctx.rest[0], "at": at}, WRITE_TIMEOUT_MS)
    if ctx.json:
        ctx.print_json(result)
    else:
        ctx.write(f"restore of {result['topic']} at {result['at']} ({result['commit'][:10]}): "
                  + _step({**result, "changedSince": False}) + "\n")
    return EXIT_OK if result.get("ok") else EXIT_FAILED


def sync_lines(result: dict[str, Any]) -> list[str]:
    """What a ``memory.sync`` result says, one step a line (commit, fetch, merge, push, conflicts)."""
    where = f"{result['remote']}/{result['branch']}"
    lines = [f"commit: {result['committed'][:10]}" if result.get("committed") else "commit: nothing new"]
    if result.get("note"):
        lines.append(result["note"])
    if result.get("fetched"):
        lines.append(f"fetch: {where}")
    merged = result.get("merged", "none")
    topics = result.get("topics") or []
    lines.append(f"merge: {merged}" + (f" ({len(topics)} topic(s): {', '.join(topics)})" if topics else ""))
    if result.get("pushed"):
        lines.append(f"push: {where} at {str(result.get('head'))[:10]}")
    for conflict in result.get("conflicts", []):
        lines.append(f"conflict: {conflict.get('topic', conflict.get('path'))} changed on both sides, "
                     f"{conflict.get('kept')} kept")
    if result.get("queued"):
        ids = ", ".join(str(i) for i in result["queued"])
        lines.append(f"queued: the other version(s) as candidate(s) {ids} (`mmctl queue show ID`)")
    if result.get("indexOverBudget"):
        lines.append("the merged MEMORY.md is over its caps: consolidate it (writes are refused until it fits)")
    if result.get("ahead") is not None:
        lines.append(f"now {result['ahead']} ahead, {result['behind']} behind {where}; revision {result['revision']}")
    return lines


def cmd_sync(ctx: Ctx) -> int:
    """``sync``: commit, fetch, merge by topic, push and reload now; prints each step."""
    result = _call(ctx, "sync", MEMORY_SYNC.name, {}, SYNC_TIMEOUT_MS)
    if ctx.json:
        ctx.print_json(result)
    else:
        ctx.write("".join(line + "\n" for line in sync_lines(result)))
    if result.get("error"):
        if not ctx.json:
            ctx.error(f"sync failed at {result['error']['stage']}: {result['error']['message'].strip()} "
                      "(no local revision is lost; the daemon retries with back-off)")
        return EXIT_FAILED
    return EXIT_OK
