"""The reference CLI's commands (``dsh-memory`` in ``src/cli.ts``), byte for byte in text and ``--json``.

Each ``cmd_*`` takes the call's :class:`~.output.Ctx` and returns the exit
code. Reads work on the files (a fresh live view per call, mm v1 §7); writes
and deletes go through the daemon when one owns the root, else straight to the
files under the root's lock. Either way the output is the reference's.
"""

from __future__ import annotations

from mmd.core.config_file import ConfigError
from mmd.core.errors import BudgetCode, ErrorCode, MMError

from ..backend import LOCKED
from ..render import budget_lines
from .output import EXIT_FAILED, EXIT_OK, Ctx, fix_for, js_json, print_refusal
from .parser import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..scope import Scope

__all__ = ["allowed_line", "body_text", "cmd_budget", "cmd_delete", "cmd_digest", "cmd_init",
           "cmd_list", "cmd_read", "cmd_search", "cmd_uri", "cmd_write", "write_via_daemon"]


def _need(value: str | None, message: str) -> str:
    if value is None:
        raise UsageError(message)
    return value


def cmd_init(ctx: Ctx) -> int:
    """``init``: create the root, ``memories/`` and an empty index if missing."""
    ctx.creatable_root()
    memory = ctx.direct().memory()
    if ctx.json:
        ctx.print_json({"ok": True, "root": str(memory.root), "files": ["MEMORY.md", "memories/"]})
    else:
        ctx.write(f"initialized memory root at {memory.root} (MEMORY.md + memories/)\n")
    return EXIT_OK


def write_via_daemon(ctx: Ctx, topic: str, content: str, budget: int | None) -> dict[str, Any] | None:
    """The write outcome from the daemon, shaped as the reference's (``pendingWrites`` of a one-write
    session, no ``revision``); None when no daemon owns the root.

    Raises:
        MMError(E_INVALID): for a bad topic, as the direct write would.
    """
    daemon = ctx.daemon()
    if daemon is None:
        return None
    from ..errors import RpcError

    try:
        outcome: dict[str, Any] = daemon.client.write(
            topic, content, summary=ctx.args.text("--summary"), tags=ctx.args.text("--tags"), budget=budget,
            review_after=ctx.args.text("--review-after"), allow_secret=ctx.args.flag("--allow-secret"),
            allow_hidden=ctx.args.flag("--allow-hidden"))
    except RpcError as error:
        raise _as_mm(error) from None
    outcome.pop("revision", None)
    if outcome.get("ok"):
        outcome["pendingWrites"] = 1
    return outcome


def _as_mm(error: Exception) -> MMError:
    """A daemon's error answer as the core error the direct path would have raised (same message and details)."""
    code = getattr(error, "code", "")
    known = code in ErrorCode.__members__
    data = getattr(error, "data", None)
    return MMError(ErrorCode(code) if known else ErrorCode.E_IO, getattr(error, "message", str(error)),
                   details=data.get("details") if isinstance(data, dict) else None)



def _change(ctx: Ctx, via_daemon: Callable[[], dict[str, Any] | None],
            direct: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """A write or delete through the daemon that owns the root, else on the files; None after printing an mm error
    (with the fix for a file-system one). A config error propagates: ``main`` words it as mmd does."""
    try:
        outcome = via_daemon()
        if outcome is not None:
            return outcome
        try:
            return direct()
        except MMError as error:
            # the lock's holder may be a daemon that was starting, or paused, when this call looked for one
            if error.code is not ErrorCode.E_IO or not error.message.startswith(LOCKED) or not ctx.look_again():
                raise
            return via_daemon() or direct()
    except ConfigError:
        raise
    except MMError as error:
        ctx.error(error.message)
        if error.code is ErrorCode.E_IO:
            ctx.error(fix_for(error, ctx))
        print_refusal(ctx, error.code.value, error.message, error.details)
        return None

def cmd_write(ctx: Ctx) -> int:
    """``write <topic> --content TEXT [--budget N] [--summary S] [--tags T] [--review-after DATE|10d|2w|3m]``."""
    topic = _need(ctx.rest[0] if ctx.rest else None, "write requires a <topic>")
    content = _need(body_text(ctx), "write requires --content TEXT")
    budget = ctx.args.integer("--budget")
    root = ctx.creatable_root()
    fresh = bool(ctx.root_flag()) and not ctx.scope().is_project and not (root / "MEMORY.md").exists()

    def direct_write() -> dict[str, Any]:
        return ctx.direct().memory().write(topic, content, budget=budget, summary=ctx.args.text("--summary"),
                                           tags=ctx.args.text("--tags"), review_after=ctx.args.text("--review-after"),
                                           allow_secret=ctx.args.flag("--allow-secret"),
                                           allow_hidden=ctx.args.flag("--allow-hidden"))

    outcome = _change(ctx, lambda: write_via_daemon(ctx, topic, content, budget), direct_write)
    if outcome is None:
        return EXIT_FAILED
    if ctx.json:
        ctx.print_json(outcome)
    elif outcome["ok"]:
        ctx.write(f"{outcome['action']} {outcome['uri']}\n")
        if outcome.get("allowed"):
            ctx.error(allowed_line(outcome["allowed"]))
        if fresh:  # a mistyped --root makes a root of its own: say so, on stderr (stdout is the reference's)
            ctx.error(f"note: {root} (--root) held no memory root; this write made a new one there")
    elif outcome.get("code") == "E_INDEX_BUDGET_EXCEEDED":  # the way out, not the reference's "see usage.index"
        from .advice import index_full_way_out
        from .suggest import near

        ctx.error(outcome["message"].replace(" (see usage.index)", ""))
        ctx.err.write(usage_figures(_as_written(ctx, topic, content, outcome["usage"])))
        over = _over_already(ctx, outcome["usage"])
        ctx.err.write(f"  the way out: {over or index_full_way_out('write', near(topic, _topics(ctx)))}\n")
    elif outcome.get("code") in _BUDGET_CODES:  # the figures follow: "(see usage)" points at --json's
        ctx.error(outcome["message"].replace(" (see usage)", ""))
        ctx.err.write(usage_figures(_as_written(ctx, topic, content, outcome["usage"])))
    else:  # an empty body has no figures to explain it
        ctx.error(outcome["message"])
    return EXIT_OK if outcome["ok"] else EXIT_FAILED


def _over_already(ctx: Ctx, usage: dict[str, Any]) -> str | None:
    """The way out when MEMORY.md is over its caps before any write (an edit made outside mmd, lowered caps), so
    that no write fits, not even an update that keeps the index's size; None when it is within them."""
    from mmd.core.paths import INDEX_NAME
    from mmd.core.text import count_lines

    index = usage.get("index") or {}
    try:
        data = (ctx.scope().root / INDEX_NAME).read_bytes()
    except OSError:
        return None
    lines, line_cap, byte_cap = count_lines(data.decode("utf-8", "replace")), index.get("lineCap"), index.get("byteCap")
    if not (isinstance(line_cap, int) and lines > line_cap or isinstance(byte_cap, int) and len(data) > byte_cap):
        return None
    return (f"MEMORY.md is over its caps already ({lines}/{line_cap} lines, {len(data)}/{byte_cap} bytes: an edit "
            "made outside mmd, or lowered caps), so no write fits until entries go: `mmctl merge A B --into C` or "
            "`mmctl delete TOPIC` (or mend the index by hand, then `mmctl doctor`)")


def _topics(ctx: Ctx) -> list[str]:
    """The topics of the roots reads see (the scope's, then the user root's) as the files say now ([] when they
    cannot be read; a project root not made yet is not made by this)."""
    try:
        return [e.topic for _, memory in ctx.memories() for e in memory.snapshot.entries]
    except MMError:
        return []


def _meant(ctx: Ctx, topic: str) -> str:
    """`` (did you mean T?)`` for a topic with no note, naming the topics near it ("" when none is)."""
    from .suggest import did_you_mean

    return did_you_mean(topic, _topics(ctx))


def allowed_line(allowed: dict[str, Any]) -> str:
    """What a person's write let through, for stderr: kinds and lines, never a value."""
    parts = [f"{s['kind']} ({s['field']}, line {s['line']})" for s in allowed.get("secrets", [])]
    parts += [f"{h['code']} {h['name']} (line {h['line']})" for h in allowed.get("hidden", [])]
    return "kept as you allowed, and recorded in the version history: " + ", ".join(parts)


def body_text(ctx: Ctx) -> str | None:
    """The body ``--content TEXT``, ``--content -`` (stdin) or ``--file PATH`` gives, or None without any.

    Raises:
        UsageError: for both ``--content`` and ``--file``.
        Failure: for a file that cannot be read, or a body that is not UTF-8 (naming the byte offset).
    """
    from .output import Failure

    content, file = ctx.args.text("--content"), ctx.args.text("--file")
    if content is not None and file is not None:
        raise UsageError("give the body once: --content TEXT, --content - (stdin) or --file PATH, not both")
    if file is None and content != "-":
        return content
    where = "stdin" if file is None else file
    try:
        raw = ctx.stdin_bytes() if file is None else open(file, "rb").read()  # noqa: SIM115 - read whole at once
    except OSError as error:
        raise Failure(f"cannot read the body from {where}: {error.strerror or error}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Failure(f"the body from {where} is not UTF-8 (byte {error.start}); convert it to UTF-8 first") \
            from None


_BUDGET_CODES = frozenset(code.value for code in BudgetCode)
"""The refusals a write's figures explain (mm v1 §6); any other refusal prints its message alone."""


def _as_written(ctx: Ctx, topic: str, content: str, usage: dict[str, Any]) -> dict[str, Any]:
    """A refused write's usage with ``noteBytes`` as the note *would* have been (the outcome says 0: nothing
    was written), in UTF-8 bytes of the serialized note (mm v1 §4)."""
    if usage.get("noteBytes"):
        return usage
    from mmd.core.format import serialize_note
    from mmd.core.paths import detail_rel

    try:
        memory_id = ctx.direct().options().memory_id
    except MMError:
        return usage
    note = serialize_note(topic=topic, memory_id=memory_id, file=detail_rel(topic), body=content)
    return {**usage, "noteBytes": len(note.encode("utf-8"))}


def usage_figures(usage: dict[str, Any]) -> str:
    """The figures of a refused write, indented under its message (text mode; ``--json`` has them all)."""
    index = usage["index"]
    return (f"  body {usage['bodyChars']}/{usage['writeBudget']} chars ({usage['overflow']} over), "
            f"note {usage['noteBytes']}/{usage['noteMaxBytes']} bytes, "
            f"index {index['lines']}/{index['lineCap']} lines, {index['bytes']}/{index['byteCap']} bytes\n")


def cmd_read(ctx: Ctx) -> int:
    """``read [topic] [--all]``: a note, the index, or the index with every note.

    In a project scope a topic is looked for in the project's root, then in the user root (the note says which
    holds it: ``scope`` in ``--json``, a ``root:`` line in text); the index is the project root's own.
    """
    ctx.need_root()
    scoped, memories = ctx.scope().is_project, ctx.memories()
    if ctx.rest:
        topic = ctx.rest[0]
        try:
            found = next(((label, n) for label, m in memories if (n := m.read_topic(topic)) is not None), None)
        except MMError as error:
            ctx.error(error.message)
            return EXIT_FAILED
        if found is None:
            if ctx.json:
                ctx.print_json({"found": False, "topic": topic, "uri": _uri(ctx, topic)})
            else:
                ctx.error(f"no note for topic {topic}{_meant(ctx, topic)}")
            return EXIT_FAILED
        label, note = found
        if ctx.json:
            ctx.print_json({**note.to_json(), "scope": label} if scoped else note.to_json())
        else:
            entry = note.entry
            review = f"review after: {entry.review_after}\n" if entry.review_after else ""  # ours, not the reference
            where = f"root: {_root_words(label)}\n" if scoped else ""
            ctx.write(_visible(f"# {note.topic}\n\nsummary: {entry.summary or '-'}\n"
                               f"tags: {', '.join(entry.tags) or '-'}\nupdated: {entry.updated}\n{review}{where}\n"
                               f"{note.body}\n"))
            if note.missing_file:  # ours: the reference prints the empty body alone
                ctx.error(f"{entry.file} is missing: the body above is empty; `mmctl doctor` says how to mend it")
        return EXIT_OK
    own = memories[0][1] if memories and memories[0][0] == ctx.scope().label else None
    if own is None:
        index: dict[str, Any] = {"memoryId": ctx.scope().label, "root": str(ctx.root()), "lineCount": 0,
                                 "byteCount": 0, "overBudget": False, "entries": []}
        notes: list[Any] = []
    else:
        index, notes = own.read_index(), own.list_notes() if ctx.args.flag("--all") else []
    every = ctx.args.flag("--all")
    if ctx.json:
        ctx.print_json({"index": index, "notes": [n.to_json() for n in notes]} if every else index)
        return EXIT_OK
    rows = [(n.topic, n.entry.summary) for n in notes] if every else \
        [(e["topic"], e["summary"]) for e in index["entries"]]
    over = " — OVER BUDGET" if index["overBudget"] else ""
    lines = [f"Memory index ({len(index['entries'])} entries, {index['lineCount']} lines / "
             f"{index['byteCount']} bytes{over}):", ""]
    lines += [f"- {topic}{f' — {summary}' if summary else ''}" for topic, summary in rows]
    if own is None:
        lines.append(f"(the project root {ctx.root()} is made by its first write)")
    behind = [m for label, m in memories if label == "user" and ctx.scope().label != "user"]
    if behind:  # ours: the index is the project root's own; say the user root's reads see too
        count = len(behind[0].snapshot.entries)
        lines += ["", f"(and {count} {'entry' if count == 1 else 'entries'} of the user root behind it, which every "
                      "read here sees: mmctl read --user)"]
    ctx.write(_visible("\n".join(lines) + "\n"))
    return EXIT_OK


def _root_words(label: str) -> str:
    """``the user root`` or ``project <key>``."""
    return "the user root" if label == "user" else f"project {label}"


def _uri(ctx: Ctx, topic: str) -> str:
    """The topic's URI in the scope's own root (its memory id), without creating that root."""
    from mmd.core.uri import uri_for

    return uri_for(ctx.direct().options().memory_id, topic)


def _visible(text: str) -> str:
    """``text`` as a terminal may show it: hidden text (bidi, zero-width, tag characters) escaped as ``\\u{202E}``
    (issue 29); only a text holding a candidate character pays for the check."""
    if text.isascii():
        return text
    from mmd.screen.hidden import escape_hidden

    return escape_hidden(text)


def cmd_list(ctx: Ctx) -> int:
    """``list``: every topic, sorted; in a project scope the project root's, then the user root's (marked
    ``[user]`` in text, ``scope`` in ``--json``)."""
    ctx.need_root()
    scoped = ctx.scope().is_project
    memories = ctx.memories()
    found = [(label, n) for label, m in memories for n in m.list_notes()]
    topics = [n.topic for _, n in found]
    if ctx.json:
        notes = [{"topic": n.topic, "uri": n.uri, "summary": n.entry.summary, "updated": n.entry.updated,
                  **({"scope": label} if scoped else {})} for label, n in found]
        ctx.print_json({"topics": topics, "count": len(topics), "notes": notes})
    else:
        shown = [f"{n.topic}  [user]" if scoped and label == "user" else n.topic for label, n in found]
        ctx.write(("(no notes)" if not shown else "\n".join(shown)) + "\n")
    for label, memory in memories:  # notes on disk the index does not name: said, on stderr (stdout is the list)
        orphans = memory.snapshot.anomalies.get("orphanFiles") or []
        if orphans:
            ctx.error(f"{_root_words(label)}: {len(orphans)} note file(s) that MEMORY.md does not name "
                      f"({', '.join(orphans[:3])}{', …' if len(orphans) > 3 else ''}): `mmctl doctor` says why, "
                      "`mmctl doctor --fix` indexes them")
    return EXIT_OK


def cmd_search(ctx: Ctx) -> int:
    """``search <query> [--mode auto|scan|fts5] [--limit N]``; in a project scope over the project root and the
    user root (:func:`mmd.core.memory.merge_searches`: each match says its ``scope``)."""
    query = _need(ctx.rest[0] if ctx.rest else None, "search requires a <query>")
    if not query.strip():
        raise UsageError("search requires a <query>: an empty query matches nothing; give words to look for")
    mode_arg = ctx.args.text("--mode") or "auto"
    limit = ctx.args.integer("--limit")
    ctx.need_root()
    mode = mode_arg if mode_arg in ("scan", "fts5") else "auto"
    memories = ctx.memories(search=True)
    results = [(label, m.search(query, mode=mode, limit=limit if limit else None)) for label, m in memories]
    if ctx.scope().is_project:
        from mmd.core.memory import merge_searches

        result = merge_searches(results, limit or memories[0][1].options.search_limit)
    else:
        result = results[0][1]
    if ctx.json:
        ctx.print_json(result)
    elif result["total"] == 0:
        ctx.write("no matches\n")
    else:
        note = f"note: {result['note']}\n" if result.get("note") else ""
        out = [f"{result['total']} match(es) via {result['engine']} — {query}\n{note}"]
        out += [f"- {m['topic']} ({m['uri']}): {m['snippet']}\n" for m in result["matches"]]
        if result["truncated"]:
            out.append("(truncated to limit)\n")
        ctx.write("".join(out))
    return EXIT_OK


def cmd_budget(ctx: Ctx) -> int:
    """``budget``: the live budget report of the scope's own root."""
    ctx.need_root()
    _own_root(ctx)
    report = ctx.direct().memory(search=True).budget()
    if ctx.json:
        ctx.print_json(report)
    else:
        ctx.write("\n".join(budget_lines(report)) + "\n")
    return EXIT_OK


def cmd_digest(ctx: Ctx) -> int:
    """``digest [--file PATH] [--text TEXT] [--max-items N] [--topic-hint S]``: candidates; never writes.

    ``--file`` of a DSH, Claude Code or Codex log goes through the daemon's adapter and candidate pipeline
    (:func:`mmctl.agentlog.digest_agent_log`); any other source is the reference's digest.
    """
    file = ctx.args.text("--file")
    text = ctx.args.text("--text")
    max_items = ctx.args.integer("--max-items")
    topic_hint = ctx.args.text("--topic-hint")
    memory = ctx.direct().memory()
    result = None
    if file:  # a DSH, Claude Code or Codex log is read as the daemon reads it (conformance rule digest-agent-log)
        from ..agentlog import digest_agent_log

        result = digest_agent_log(file, memory, max_items=max_items, topic_hint=topic_hint)
    if result is None:
        result = memory.digest(text=text, file=file, max_items=max_items, topic_hint=topic_hint)
    if ctx.json:
        ctx.print_json(result)
        return EXIT_OK
    if result["sourceKind"] == "none":
        ctx.error(f"no digest source: {result['note']}")
        return EXIT_FAILED
    source = f"{result['source']} ({result['agent']} log)" if result.get("agent") else result["source"]
    out = [f"digest from {source} — {len(result['candidates'])} candidate(s); review then mem_write:\n"]
    out += [f"- [{c['topic']}/{c['kind']}] {c['summary']} ({c['chars']}/{c['budget']} chars)\n"
            for c in result["candidates"]]
    ctx.write("".join(out))
    return EXIT_OK


def _delete_via_daemon(ctx: Ctx, topic: str) -> dict[str, Any] | None:
    daemon = ctx.daemon()
    if daemon is None:
        return None
    from ..errors import RpcError

    try:
        raw = daemon.client.delete(topic)
    except RpcError as error:
        raise _as_mm(error) from None
    # A delete that changed anything makes a new revision of its root: that is the one pending write of this call.
    before = _revision_of(daemon.status, ctx.scope())
    changed = bool(raw["removed"]) if before is None else raw.get("revision") != before
    return {"ok": raw["ok"], "removed": raw["removed"], "topic": raw["topic"], "pendingWrites": 1 if changed else 0,
            "usage": raw["usage"]}


def _revision_of(status: dict[str, Any], scope: Scope) -> int | None:
    """The revision ``daemon.status`` gave for ``scope``'s own root (``roots[].revision`` of a project; the top
    level's for the user root), or None when the status has none (a project root the daemon did not serve yet)."""
    if not scope.is_project:
        return status.get("revision")
    row = next((r for r in status.get("roots") or () if isinstance(r, dict) and r.get("scope") == scope.label), None)
    return None if row is None else row.get("revision")


def cmd_delete(ctx: Ctx) -> int:
    """``delete <topic>``: always allowed, even over budget."""
    topic = _need(ctx.rest[0] if ctx.rest else None, "delete requires a <topic>")
    ctx.creatable_root()
    outcome = _change(ctx, lambda: _delete_via_daemon(ctx, topic), lambda: ctx.direct().memory().delete(topic))
    if outcome is None:
        return EXIT_FAILED
    if ctx.json:
        ctx.print_json(outcome)
    else:
        nothing = not outcome["removed"] and not outcome.get("pendingWrites")
        ctx.write(_deleted(topic, outcome) + (_meant(ctx, topic) if nothing else "") + "\n")
    return EXIT_OK


def _deleted(topic: str, outcome: dict[str, Any]) -> str:
    """``deleted T: removed``; for a dangling entry (a change without a file removed), what was removed; for no
    note at all, that there was nothing to delete (the reference says ``deleted T: not found``: a listed
    deviation, ``tests/conformance_rules.py``)."""
    if outcome["removed"]:
        return f"deleted {topic}: removed"
    if outcome.get("pendingWrites"):
        return f"deleted {topic}: removed its index entry (the note file was already gone)"
    return f"nothing to delete: no note for topic {topic}"


def _own_root(ctx: Ctx) -> None:
    """Raise :class:`Failure` when the scope's own root is a project root not made yet (a read must not make it)."""
    from .output import Failure

    if not ctx.root().joinpath("MEMORY.md").is_file():
        raise Failure(f"{ErrorCode.E_NOT_INITIALIZED.value}: the project root {ctx.root()} does not exist yet (its "
                      "first write makes it); --user reports the user root")


def cmd_uri(ctx: Ctx) -> int:
    """``uri <topic>``: the topic's canonical URI (a bad topic escapes as an internal error, as in the reference)."""
    topic = _need(ctx.rest[0] if ctx.rest else None, "uri requires a <topic>")
    ctx.need_root()
    if not ctx.root().joinpath("MEMORY.md").is_file():  # a project root not made yet: its URIs are known
        from mmd.core.text import validate_topic

        validate_topic(topic)
        uri = _uri(ctx, topic)
    else:
        uri = ctx.direct().memory().uri_for(topic)
    ctx.write(js_json({"topic": topic, "uri": uri}) + "\n" if ctx.json else uri + "\n")
    return EXIT_OK
