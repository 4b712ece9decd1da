"""``mmctl status`` and ``mmctl watch``: the daemon's state, once or as its events come (need the daemon).

- ``status``: aligned ``key  value`` rows, then the agent-log sources (``ingest.sources``) as a table,
  then a ``warning:`` line for each thing that needs a person (a lost root, paths others can write,
  a watcher that polls because the OS refused native watches); ``--json`` the daemon's
  ``daemon.status`` value ``{version, pid, root, revision, sessions, …}``;
- ``watch``: one line per event; ``--json`` one event per line, ``{topic, seq, at, …payload, missed?, restarted?}``.
"""

from __future__ import annotations

from typing import Any

from mmd.wire.events import (
    DAEMON_HEARTBEAT,
    MEMORY_CHANGED,
    MEMORY_DUE,
    MEMORY_NUDGE,
    MEMORY_SYNCED,
    QUEUE_ADDED,
    QUEUE_DECIDED,
)

from ..render import table, terminal_width
from .output import EXIT_OK, Ctx, aligned, js_json
from .parser import UsageError

__all__ = ["cmd_status", "cmd_watch", "status_warnings"]


def cmd_status(ctx: Ctx) -> int:
    """``status``: the daemon's ``daemon.status`` (needs the daemon); the agent-log sources as a table."""
    from .advice import near_caps

    status = ctx.need_daemon("status").status
    if ctx.json:
        ctx.print_json(status)
        return EXIT_OK
    ingest = status.get("ingest") if isinstance(status, dict) else None
    sources = ingest.get("sources") if isinstance(ingest, dict) else None
    if isinstance(ingest, dict) and isinstance(sources, list):
        status = {**status, "ingest": {k: v for k, v in ingest.items() if k != "sources"}}
    roots = status.pop("roots", None) if isinstance(status, dict) else None
    rows = [(k, _git_line(v) if k == "git" else _readable(k, v)) for k, v in status.items()]
    width = max((len(k) for k, _ in rows), default=0)
    room = terminal_width() - width - 2
    ctx.write(aligned([(k, v if k in _WHOLE else wrap_parts(v, room, width + 2)) for k, v in rows]))
    for key, value in status.items():
        if isinstance(value, dict) and value.get("lastError") and key != "git":
            ctx.write(f"  {key}: last error: {value['lastError']}\n")
    if isinstance(roots, list) and len(roots) > 1:  # the user root alone is the index row above
        ctx.write("\nroots:\n" + roots_table(roots))
    if isinstance(sources, list) and sources:
        ctx.write("\nsources:\n" + sources_table(sources))
    for line in status_warnings(status):
        ctx.write(f"warning: {line}\n")
    for r in roots or []:
        if not isinstance(r, dict) or r.get("scope") == "user":
            continue
        if r.get("overBudget"):
            ctx.write(f"warning: project root {r['scope']} is over its caps ({r['lines']}/{r['lineCap']} lines, "
                      f"{r['bytes']}/{r['byteCap']} bytes): consolidate with `mmctl merge A B --into C --project "
                      f"{r['scope']}` or delete a topic there\n")
        elif near := near_caps(*(int(r.get(k) or 0) for k in ("lines", "lineCap", "bytes", "byteCap"))):
            ctx.write(f"warning: project root {r['scope']}: {near}; add --project {r['scope']} to each\n")
    return EXIT_OK


def wrap_parts(value: Any, room: int, indent: int) -> str:
    """A status row's ``a 1 · b 2 · …`` value within ``room`` columns: whole parts, the ones that do not fit on
    further lines indented by ``indent`` spaces (a part longer than ``room`` is shown whole on its own line:
    nothing a person needs, a folder or a count, is cut)."""
    parts = " ".join(str(value).split()).split(" · ")
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + 3 + len(part) <= room:
            lines[-1] += " · " + part
        else:
            lines[-1] += " ·"
            lines.append(part)
    return ("\n" + " " * indent).join(lines)


_WHOLE = ("root", "endpoints", "http", "git")
"""Rows shown as they are, on one line: paths, endpoints, the review page's URL and the git line (its error)."""


def _readable(key: str, value: Any) -> Any:
    """A ``daemon.status`` member as a person reads it: ``pending 3 · accepted 1``, the review page's URL;
    ``-`` for nothing, ``yes``/``no`` for a flag, and a part's empty fields left out (no Python ``None``)."""
    if key == "http" and isinstance(value, dict):
        return value.get("url")
    if key == "index" and isinstance(value, dict):
        return (f"{value.get('entries')} entries · {value.get('lines')}/{value.get('lineCap')} lines · "
                f"{value.get('bytes')}/{value.get('byteCap')} bytes" + (" · over its caps" if value.get("overBudget")
                                                                      else "")
                + (f" · {len(value['broken'])} unreadable" if value.get("broken") else ""))
    if isinstance(value, dict):  # a last error gets a line of its own, never cut
        return " · ".join(f"{k} {_word(v)}" for k, v in value.items()
                          if not isinstance(v, dict | list) and v is not None and k != "lastError") or "-"
    return _word(value)


def _word(value: Any) -> Any:
    """``None`` or an empty list -> ``-``, ``True``/``False`` -> ``yes``/``no``; anything else as it is."""
    if value is None or value == []:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value


def status_warnings(status: dict[str, Any]) -> list[str]:
    """The sentences ``status`` adds under its rows: what in ``daemon.status`` needs a person."""
    out = []
    if status.get("rootLost"):
        out.append(f"writes are refused: {status['rootLost']}; restart mmd")
    index = status.get("index") or {}
    if index.get("overBudget"):
        out.append(f"MEMORY.md is over its caps ({index.get('lines')}/{index.get('lineCap')} lines, "
                   f"{index.get('bytes')}/{index.get('byteCap')} bytes): every write that does not shrink it is "
                   "refused; consolidate with `mmctl merge A B --into C` or `mmctl delete TOPIC` (never truncate)")
    elif index:
        from .advice import near_caps

        near = near_caps(*(int(index.get(k) or 0) for k in ("lines", "lineCap", "bytes", "byteCap")))
        if near:
            out.append(near)
    broken = index.get("broken") or []
    if broken:
        named = ", ".join(f"{b.get('topic')} ({b.get('file')}: {b.get('message')})" for b in broken[:3])
        more = f" and {len(broken) - 3} more" if len(broken) > 3 else ""
        out.append(f"{len(broken)} topic(s) cannot be read: {named}{more}; every other topic reads and writes as "
                   "before; `mmctl doctor` says how to mend them")
    loose = status.get("looseModes") or []
    if loose:
        paths = ", ".join(f"{m.get('path')} ({m.get('mode')})" for m in loose)
        out.append(f"others can write this memory (a prompt-injection channel): {paths}; chmod go-w them")
    for name in ("watcher", "ingest"):
        part = status.get(name) or {}
        if part.get("watchError"):
            out.append(f"the {name} polls: the OS refused native file watches ({part['watchError']})")
    export = status.get("export") or {}
    if export.get("lastError"):
        out.append(f"an [export] block is stale (the index changed and it could not be written): "
                   f"{export['lastError']}")
    extractor = status.get("extractor") or {}
    if extractor.get("failures") and extractor.get("lastError"):
        out.append(f"the extractor failed {extractor['failures']} of {extractor.get('runs', 0)} run(s) since start; "
                   f"last: {extractor['lastError']}")
    return out


def _size(n: Any) -> str:
    """Bytes as ``123 B`` / ``4.5 kB`` / ``67.8 MB`` (decimal units)."""
    if not isinstance(n, int):
        return "-"
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _backfill(b: Any) -> str:
    if not isinstance(b, dict) or (not b.get("done") and not b.get("filesTotal")):
        return "-"
    files = f"{b.get('files', 0)}/{b.get('filesTotal', 0)} files"
    if b.get("done"):
        return f"{files} in {b.get('seconds') or 0:.1f} s"
    return f"{files}, {_size(b.get('bytes'))} of {_size(b.get('bytesTotal'))}"


def roots_table(roots: list[Any]) -> str:
    """``daemon.status`` ``roots`` as aligned rows: scope, notes, MEMORY.md lines and UTF-8 bytes against their
    caps (``!`` when over them), the revision and the folder (docs/projects.md)."""
    rows = [("root", "notes", "lines", "bytes", "revision", "folder")]
    for r in roots:
        if isinstance(r, dict):
            over = "!" if r.get("overBudget") else ""
            rows.append((str(r.get("scope")), str(r.get("entries")), f"{r.get('lines')}/{r.get('lineCap')}{over}",
                         f"{r.get('bytes')}/{r.get('byteCap')}{over}", str(r.get("revision")), str(r.get("root"))))
    return "\n".join("  " + line for line in table(rows, (52, 6, 10, 14, 9, None))) + "\n"


def sources_table(sources: list[Any]) -> str:
    """``daemon.status`` ``ingest.sources`` as aligned rows: source, state (``off`` when turned off), files
    followed, bytes read, last event, errors, backfill progress and folder; each last error on its own line."""
    rows = [("source", "state", "files", "read", "last event", "errors", "backfill", "folder")]
    notes: list[str] = []
    for s in sources:
        if not isinstance(s, dict):
            continue
        rows.append((str(s.get("kind", "?")), str(s.get("phase") if s.get("enabled") else "off"),
                     str(s.get("files", 0)), _size(s.get("bytesRead")), str(s.get("lastEventAt") or "-"),
                     str(s.get("errors", 0)), _backfill(s.get("backfill")), str(s.get("folder", ""))))
        if s.get("lastError"):
            notes.append(f"  {s.get('kind')}: last error: {s['lastError']}")
    lines = ["  " + line for line in table(rows, (16, 10, 8, 10, 24, 8, 28, None))]
    return "\n".join(lines + notes) + "\n"


def _git_line(git: Any) -> Any:
    """``daemon.status``'s ``git`` object in one line: branch, ahead/behind, last sync and its error."""
    if not isinstance(git, dict):
        return "off (start mmd with --git to keep the history in git and sync it)"
    where = f"{git.get('remote')}/{git.get('branch')}"
    parts = [f"branch {git.get('branch')}, {git.get('commits')} commit(s) since start"]
    if not git.get("remoteConfigured"):
        parts.append(f"no remote {git.get('remote')!r}: committed locally only")
    elif git.get("ahead") is not None:
        parts.append(f"{git['ahead']} ahead, {git['behind']} behind {where}")
    last = git.get("lastSync")
    parts.append(f"last sync {last['at']} ({'ok' if last['ok'] else 'failed'})" if last else "not synced yet")
    error = (last or {}).get("error")
    refused = git.get("refused")
    if refused:  # shown whole, until a sync takes the remote again
        parts.append(refused.get("message", ""))
    if error and not (refused and error.get("message") == refused.get("message")):
        parts.append(f"error at {error['stage']}: {error['message'].strip()[:200]}")
    if error:
        parts.append(f"{git.get('failures')} failure(s), next try {git.get('nextSyncAt')}")
    if git.get("commitError"):
        parts.append(f"commit failed: {git['commitError']}")
    running = git.get("syncing")
    if running:
        parts.append(f"syncing since {running.get('since')} (now: {running.get('stage')}"
                     + (f", waiting for {running.get('remote')}" if running.get("stage") in ("fetch", "push") else "")
                     + ")")
    return "; ".join(parts)


def _describe(event: Any) -> str:
    d = event.data
    if event.topic == MEMORY_CHANGED:
        parts = [f"{sign}{item.get('topic')}" for sign, key in (("+", "added"), ("~", "updated"), ("-", "removed"))
                 for item in d.get(key, [])]
        return f"revision {d.get('revision')} ({d.get('cause')}): {' '.join(parts) or 'no topic changed'}"
    if event.topic == MEMORY_NUDGE:
        actions = "; ".join(d.get("suggestedActions", []))
        ended = f" of {d['agent']} session {d.get('sessionId')} in {d.get('project') or '?'}" if d.get("agent") else ""
        return (f"{d.get('reason')}{ended}: {d.get('pendingWrites', 0)} pending, {d.get('queuePending', 0)} queued"
                f" — {actions}")
    if event.topic == MEMORY_DUE:
        late = -int(d.get("daysLeft") or 0)
        when = f"overdue by {late} day(s)" if late > 0 else "due today"
        return f"{d.get('topic')} review-after {d.get('reviewAfter')} ({when}): re-check it, then rewrite or delete it"
    if event.topic == QUEUE_ADDED:
        return f"{len(d.get('ids', []))} candidate(s) from {d.get('agent', '?')} {d.get('source', '?')}"
    if event.topic == QUEUE_DECIDED:
        written = f" as {d['topic']}" if d.get("topic") else ""
        return f"candidate {d.get('id')} {d.get('status')}{written}, {d.get('queuePending', 0)} queued"
    if event.topic == DAEMON_HEARTBEAT:
        return f"revision {d.get('revision')}, {d.get('queuePending', 0)} queued"
    if event.topic == MEMORY_SYNCED:
        error = d.get("error")
        pushed = "pushed" if d.get("pushed") else "not pushed"
        return (f"{d.get('remote')}/{d.get('branch')}: {d.get('merged')}, {pushed}, "
                f"{len(d.get('queued', []))} conflict(s) queued" + (f"; failed at {error['stage']}" if error else ""))
    return js_json(d)


HEARTBEAT_MS = 5000
"""The daemon's default ``daemon.heartbeatMs``: the interval assumed until a heartbeat says the real one."""
MISSED_BEATS = 3
"""Heartbeats missed in a row before ``watch`` says the daemon is gone."""


def cmd_watch(ctx: Ctx) -> int:
    """``watch [--topic T] [--count N] [--json]``: print events as they come, until Ctrl+C or N events.

    Says ``(the daemon is gone: …)`` on stderr after :data:`MISSED_BEATS` heartbeat
    intervals without any event, and ``(the daemon is back)`` at the next event.
    """
    count = ctx.args.integer("--count")
    topic = ctx.args.text("--topic")
    if topic is not None:
        from ..events import TOPICS

        if not any(t.startswith(topic) for t in TOPICS):
            raise UsageError(f"watch: --topic {topic!r} matches no event topic (use one of {', '.join(TOPICS)}, "
                             "or a prefix such as memory/)")
    daemon = ctx.need_daemon("watch")
    seen = 0
    with daemon.client.subscribe([], timeout_ms=HEARTBEAT_MS) as events:
        for event in _watched(ctx, events):
            if topic and not event.topic.startswith(topic):
                continue
            _print_event(ctx, event)
            seen += 1
            if count and seen >= count:
                break
    return EXIT_OK


def _watched(ctx: Ctx, events: Any) -> Any:
    """Every event of ``events``; says on stderr when the heartbeats stop and when they come back.

    The interval is the one each heartbeat states (``intervalMs``); from a daemon that states none, the
    longest gap seen between two heartbeats. Never the last gap alone: on a loaded machine two heartbeats
    can arrive a millisecond apart, and three such "intervals" of silence are no sign of a dead daemon.
    """
    import time

    interval_ms, last, last_beat, gone = HEARTBEAT_MS, time.monotonic(), None, False
    widest = 0
    while True:
        try:
            event = next(events)
        except StopIteration:
            event = None
        now = time.monotonic()
        if event is None:
            if not gone and (now - last) * 1000 >= MISSED_BEATS * interval_ms:
                gone = True
                ctx.error(f"the daemon is gone: no heartbeat for {MISSED_BEATS} intervals ({interval_ms} ms each); "
                          "waiting for it to come back (Ctrl+C stops)")
            continue
        if gone:
            gone = False
            ctx.error("the daemon is back")
        if event.topic == DAEMON_HEARTBEAT:
            stated = event.data.get("intervalMs")
            if isinstance(stated, int) and not isinstance(stated, bool) and stated > 0:
                interval_ms = stated
            elif last_beat is not None:
                widest = max(widest, round((now - last_beat) * 1000))
                interval_ms = max(1, widest)
            last_beat = now
            events.timeout_ms = interval_ms
        last = now
        yield event


def _print_event(ctx: Ctx, event: Any) -> None:
    if ctx.json:
        ctx.print_json(event.to_json())
        return
    if event.restarted:
        ctx.write("(the daemon restarted: resync with `mmctl list`)\n")
    elif event.missed:
        ctx.write(f"(missed {event.missed} event(s))\n")
    ctx.write(f"{event.data.get('at', '')}  #{event.seq:<5} {event.topic:<16} {_describe(event)}\n")
