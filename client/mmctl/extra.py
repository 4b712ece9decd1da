"""Commands beyond the reference CLI: ``status``, ``queue``, ``watch``, ``nudge``, ``guide``, ``doctor``, ``mcp``.

``status``, ``queue`` and ``watch`` need the daemon and say how to start it
when none answers; ``nudge``, ``guide`` and ``doctor`` work with or without
one. Text output is aligned ``key  value`` rows for people; ``--json`` prints
one line of JSON:

- ``status``: the daemon's ``daemon.status`` value ``{version, pid, root, revision, sessions, …}``;
- ``queue``: the daemon's ``queue.*`` value;
- ``watch``: one event per line, ``{topic, seq, at, …payload, missed?, restarted?}``;
- ``nudge``: ``{at, pendingWrites, noteCount, indexOverBudget, needsCommit, suggestedActions}``;
- ``doctor``: ``{root, ok, problems: [{kind, topic?, file?, message, fixable}], fixed: [{file, done, message}]}``.
"""

from __future__ import annotations

from typing import Any

from .args import UsageError
from .output import EXIT_FAILED, EXIT_OK, Ctx, js_json

__all__ = ["aligned", "cmd_doctor", "cmd_guide", "cmd_mcp", "cmd_nudge", "cmd_queue", "cmd_status", "cmd_watch"]


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_flat(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return ", ".join(_flat(v) for v in value) or "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None or value == "" else str(value)


def aligned(rows: list[tuple[str, Any]]) -> str:
    """``key  value`` lines with the values in one column; nested values are flattened to ``k=v, …``."""
    width = max((len(k) for k, _ in rows), default=0)
    return "".join(f"{k.ljust(width)}  {_flat(v)}\n" for k, v in rows)


def cmd_status(ctx: Ctx) -> int:
    """``status``: the daemon's ``daemon.status`` (needs the daemon)."""
    status = ctx.need_daemon("status").status
    if ctx.json:
        ctx.print_json(status)
    else:
        ctx.write(aligned(list(status.items())))
    return EXIT_OK


def _candidates(result: Any) -> list[dict[str, Any]]:
    """The candidates of a ``queue.list`` answer (``{candidates, total, pending, …}``)."""
    items = result.get("candidates") if isinstance(result, dict) else result
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def _queue_table(result: Any, status: str) -> str:
    items = _candidates(result)
    total = result.get("total", len(items)) if isinstance(result, dict) else len(items)
    pending = result.get("pending") if isinstance(result, dict) else None
    head = f"{len(items)} of {total} {status} candidate(s)" + (f", {pending} pending" if pending is not None else "")
    if not items:
        return head + "\n"
    rows = [("id", "status", "kind", "topic", "chars", "summary")]
    rows += [(str(c.get("id", "")), str(c.get("status", "")), str(c.get("kind", "")), str(c.get("topic", "")),
              str(c.get("chars", "")), str(c.get("summary", ""))[:72]) for c in items]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join([*(r[i].ljust(widths[i]) for i in range(5)), r[5]]).rstrip() for r in rows]
    return head + ":\n\n" + "\n".join(lines) + "\n\n`mmctl queue show <id>` shows a body; accept or reject it.\n"


def _show(candidate: dict[str, Any]) -> str:
    rows = [(k, v) for k, v in candidate.items() if k != "body"]
    return aligned(rows) + f"\n{candidate.get('body', '')}\n"


def _candidate_id(raw: str) -> str | int:
    return int(raw) if raw.isdigit() else raw


def _decided(sub: str, cid: str | int, result: dict[str, Any]) -> str:
    """The text of an accept or reject answer (``{ok, candidate, write?}``)."""
    if sub == "reject":
        return f"rejected {cid}\n"
    write = result.get("write") or {}
    if result.get("ok"):
        return f"accepted {cid}: {write.get('action', 'written')} {write.get('uri', '')}\n"
    usage = write.get("usage", {})
    return (f"not accepted: {write.get('message', 'the write was refused')} ({usage.get('bodyChars')}/"
            f"{usage.get('writeBudget')} chars); the candidate stays pending: accept it with a shorter --content\n")


def cmd_queue(ctx: Ctx) -> int:
    """``queue list|show|accept|reject``: the review queue (needs the daemon)."""
    sub = ctx.rest[0] if ctx.rest else "list"
    if sub not in ("list", "show", "accept", "reject"):
        raise UsageError(f"unknown queue command: {sub} (use list, show, accept or reject)")
    if sub != "list" and len(ctx.rest) < 2:
        raise UsageError(f"queue {sub} requires a candidate <id> (see `mmctl queue list`)")
    a = ctx.args
    limit, offset = a.integer("--limit"), a.integer("--offset")
    client = ctx.need_daemon("queue").client
    if sub == "list":
        status = a.text("--status") or "pending"
        result = client.queue_list(status=status, limit=limit or None, offset=offset)
        ctx.write(js_json(result) + "\n" if ctx.json else _queue_table(result, status))
        return EXIT_OK
    cid = _candidate_id(ctx.rest[1])
    if sub == "show":
        result = client.queue_get(cid)
        ctx.write(js_json(result) + "\n" if ctx.json else _show(result))
        return EXIT_OK
    if sub == "accept":
        result = client.queue_accept(cid, topic=a.text("--topic"), content=a.text("--content"),
                                     summary=a.text("--summary"), tags=a.text("--tags"),
                                     replace=a.flag("--replace"))
    else:
        result = client.queue_reject(cid, reason=a.text("--reason"))
    if ctx.json:
        ctx.print_json(result)
    elif result.get("ok"):
        ctx.write(_decided(sub, cid, result))
    else:
        ctx.error(_decided(sub, cid, result).rstrip("\n"))
    return EXIT_OK if result.get("ok") else EXIT_FAILED


def _describe(event: Any) -> str:
    d = event.data
    if event.topic == "memory/changed":
        parts = [f"{sign}{item.get('topic')}" for sign, key in (("+", "added"), ("~", "updated"), ("-", "removed"))
                 for item in d.get(key, [])]
        return f"revision {d.get('revision')} ({d.get('cause')}): {' '.join(parts) or 'no topic changed'}"
    if event.topic == "memory/nudge":
        actions = "; ".join(d.get("suggestedActions", []))
        return f"{d.get('reason')}: {d.get('pendingWrites', 0)} pending, {d.get('queuePending', 0)} queued — {actions}"
    if event.topic == "queue/added":
        return f"{len(d.get('ids', []))} candidate(s) from {d.get('source', '?')}"
    if event.topic == "daemon/heartbeat":
        return f"revision {d.get('revision')}, {d.get('queuePending', 0)} queued"
    return js_json(d)


def cmd_watch(ctx: Ctx) -> int:
    """``watch [--topic T] [--count N] [--json]``: print events as they come, until Ctrl+C or N events."""
    count = ctx.args.integer("--count")
    topic = ctx.args.text("--topic")
    daemon = ctx.need_daemon("watch")
    seen = 0
    with daemon.client.subscribe([topic] if topic else []) as events:
        for event in events:
            if ctx.json:
                ctx.print_json(event.to_json())
            else:
                if event.restarted:
                    ctx.write("(the daemon restarted: resync with `mmctl list`)\n")
                elif event.missed:
                    ctx.write(f"(missed {event.missed} event(s))\n")
                ctx.write(f"{event.data.get('at', '')}  #{event.seq:<5} {event.topic:<16} {_describe(event)}\n")
            seen += 1
            if count and seen >= count:
                break
    return EXIT_OK


def cmd_nudge(ctx: Ctx) -> int:
    """``nudge``: the nudge report, from the daemon when one runs."""
    daemon = ctx.daemon()
    report = daemon.client.nudge() if daemon is not None else ctx.direct().memory().nudge()
    if ctx.json:
        ctx.print_json(report)
        return EXIT_OK
    rows = [("at", report["at"]), ("notes", report["noteCount"]), ("pending writes", report["pendingWrites"]),
            ("index over budget", report["indexOverBudget"]), ("needs commit", report["needsCommit"])]
    ctx.write(aligned(rows) + "".join(f"- {a}\n" for a in report["suggestedActions"]))
    return EXIT_OK


def cmd_guide(ctx: Ctx) -> int:
    """``guide [--lang en|zh]``: the agents' guide (also the MCP server's instructions)."""
    from mmd.core.guide import guide_text

    lang = ctx.args.text("--lang") or "en"
    if lang not in ("en", "zh", "auto"):
        raise UsageError(f'--lang expects en or zh (got "{lang}")')
    options = ctx.direct().options()
    ctx.write(guide_text(lang, index_lines=options.index_lines, index_bytes=options.index_bytes))
    return EXIT_OK


def cmd_doctor(ctx: Ctx) -> int:
    """``doctor [--fix]``: see :mod:`.doctor`."""
    from .doctor import run_doctor

    return run_doctor(ctx)


def cmd_mcp(ctx: Ctx) -> int:
    """``mcp``: serve the MCP tools over stdio until the client disconnects."""
    from .mcp_server import serve

    return serve(ctx)
