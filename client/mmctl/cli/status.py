"""``mmctl status`` and ``mmctl watch``: the daemon's state, once or as its events come (need the daemon).

- ``status``: aligned ``key  value`` rows; ``--json`` the daemon's ``daemon.status`` value
  ``{version, pid, root, revision, sessions, …}``;
- ``watch``: one line per event; ``--json`` one event per line, ``{topic, seq, at, …payload, missed?, restarted?}``.
"""

from __future__ import annotations

from typing import Any

from .output import EXIT_OK, Ctx, aligned, js_json
from .parser import UsageError

__all__ = ["cmd_status", "cmd_watch"]


def cmd_status(ctx: Ctx) -> int:
    """``status``: the daemon's ``daemon.status`` (needs the daemon)."""
    status = ctx.need_daemon("status").status
    if ctx.json:
        ctx.print_json(status)
    else:
        ctx.write(aligned(list(status.items())))
    return EXIT_OK


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
    if topic is not None:
        from ..events import TOPICS

        if not any(t.startswith(topic) for t in TOPICS):
            raise UsageError(f"watch: --topic {topic!r} matches no event topic (use one of {', '.join(TOPICS)}, "
                             "or a prefix such as memory/)")
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
