"""``mmctl queue list|show|accept|reject`` and ``mmctl merge``: the daemon's review queue (needs the daemon).

Text output is a table for ``list`` (id, score, seen, kind, who said it, root,
proposed topic, summary; a flagged candidate's flags, each with its why, on the
lines below it) and aligned ``key  value`` rows plus the flags, a held topic's
diff and the evidence for ``show``; hidden text is shown escaped whatever the
daemon sent; ``--json`` prints the daemon's ``queue.*`` value as one line of
JSON. ``accept`` of several ids takes no flagged one unless ``--flagged``.
``merge`` joins notes through the daemon when one runs, else through the files
under the root's lock.
"""

from __future__ import annotations

import os
from typing import Any

from mmd.candidates.labels import flag_lines, is_flagged, proposal_lines, speaker_of
from mmd.screen.hidden import escape_hidden
from mmd.wire.scores import score_text, shown_at_least

from ..errors import RpcError
from ..render import candidates, cut, table, terminal_width
from .output import EXIT_FAILED, EXIT_OK, Ctx, aligned, js_json
from .parser import UsageError
from .queuescope import accept_target, scope_param

__all__ = ["cmd_merge", "cmd_queue", "every_candidate"]

_COLUMNS = ("id", "score", "seen", "kind", "by", "root", "topic", "summary")


_MARKS = {"append": "+", "replace": "~", "delete": "-"}


def _proposed(c: dict[str, Any]) -> str:
    """The proposed topic: ``+topic`` when accepting appends to that note, ``~topic`` when it replaces its text,
    ``-topic`` when it deletes it (an agent's proposals)."""
    proposal = c.get("proposal") or {}
    topic = str(proposal.get("topic") or c.get("topic", ""))
    return _MARKS.get(str(proposal.get("action")), "") + topic


def _project(c: dict[str, Any]) -> str:
    """The root the candidate is proposed to (``user`` or a project key, ``docs/projects.md``); for a candidate
    of a daemon that knows no scopes, the last folder of the first project it was seen in ('-' when none)."""
    if c.get("scope"):
        return str(c["scope"])
    for e in c.get("evidence") or []:
        if e.get("project"):
            return os.path.basename(str(e["project"]).rstrip("/")) or str(e["project"])
    return "-"


def _cwd() -> str | None:
    """The current folder (its project's candidates come first: the daemon knows where agent sessions ran)."""
    try:
        return os.getcwd()
    except OSError:
        return None


def _left_out(left: dict[str, Any], days: Any, hidden: bool = True) -> list[str]:
    """What the default view left out, in words (``leftOut`` of ``queue.list``): the drafts hidden by their
    session's budget (unless the list shows them: ``hidden`` false), and the expired ones and why."""
    parts = []
    if hidden and left.get("hidden"):
        parts.append(f"{left['hidden']} more hidden by their session's budget: --all lists them")
    why = [f"{left['heldBack']} held back by the first backfill"] if left.get("heldBack") else []
    why += [f"{left['expired']} pending over {days or 30} days"] if left.get("expired") else []
    if why:
        parts.append(f"{int(left.get('heldBack') or 0) + int(left.get('expired') or 0)} expired ({', '.join(why)}): "
                     "--status expired lists them, `mmctl queue undo ID` brings one back")
    return parts


def _queue_head(shown: int, total: int, pending: int | None, status: str, offset: int,
                filtered: bool = False, left: dict[str, Any] | None = None, days: Any = None,
                listed_hidden: bool | None = None) -> str:
    """``3 of 92 pending candidate(s) (275 more hidden by their session's budget: --all lists them); --offset 3 …``;
    with nothing on show, ``the review queue is empty: …``.

    ``left`` (``queue.list``'s ``leftOut``) counts what the default view leaves out among the candidates the
    filters select; from a daemon that gives none, ``pending`` counts the whole queue, and with a filter
    (``--project``, ``--agent``, ``--min-score``, ``--all``) the difference is not what the budget hides, so
    no number is claimed then. ``listed_hidden`` (default ``filtered``): the list shows the hidden ones too
    (``--all``, ``--min-score``), so they are not counted as left out."""
    if status == "pending" and total == 0:
        head = "no pending candidate matches" if filtered else "no pending candidate on show: the review queue is empty"
    else:
        head = f"{shown} of {total} {status} candidate(s)"
    listed_hidden = filtered if listed_hidden is None else listed_hidden
    notes = _left_out(left, days, not listed_hidden) if left is not None and status == "pending" else []
    if left is None and pending is not None and status == "pending" and pending > total and not filtered:
        notes = [f"{pending - total} more hidden by their session's budget: --all lists them"]
    if notes:
        head += f" ({'; '.join(notes)})"
    elif pending is not None and status != "pending":
        head += f"; {pending} pending"
    if offset + shown < total:
        head += f"; --offset {offset + shown} lists the next ones"
    return head


def _queue_table(result: Any, status: str, offset: int = 0, filtered: bool = False, listed_hidden: bool = False,
                 ) -> str:
    items = candidates(result)
    total = result.get("total", len(items)) if isinstance(result, dict) else len(items)
    pending = result.get("pending") if isinstance(result, dict) else None
    left = result.get("leftOut") if isinstance(result, dict) and isinstance(result.get("leftOut"), dict) else None
    days = result.get("expireDays") if isinstance(result, dict) else None
    head = _queue_head(len(items), total, pending, status, offset, filtered, left, days, listed_hidden)
    if not items:
        return head + "\n"
    flagged = sum(map(is_flagged, items))
    warn = f"\n⚑ {flagged} flagged (listed last): read why first; a bulk accept takes none of them unless --flagged." \
        if flagged else ""
    return (head + ":\n\n" + _rows(items) + "\n\n`mmctl queue show <id>` shows a body and where it was seen; "
            "accept or reject it (+topic: accepting appends to that note, which the first accept creates; ~topic "
            "replaces its text, -topic deletes it: an agent's proposal)." + warn + "\n")


NARROW = 110
"""Below this many columns the summary goes on a line of its own under each row (else ~12 characters are left)."""


def _state(c: dict[str, Any]) -> str:
    """"" for a pending candidate on show; ``hidden`` (by its session's budget), ``rejected``, ``accepted``
    (``accepted→topic`` naming the note it went to), ``expired`` (``expired:backfill`` when a first backfill held
    it back)."""
    status = c.get("status", "pending")
    if status == "pending":
        return "" if c.get("visible", True) else "hidden"
    if status == "expired":
        return "expired:backfill" if c.get("reason") == "backfill" else "expired"
    written = (c.get("written") or {}).get("topic")
    return f"{status}→{written}" if written else str(status)


def _rows(items: list[Any], width: int | None = None) -> str:
    """The candidates as table rows (id, score, seen, kind, project, proposed topic, summary), with a header;
    a ``state`` column after ``seen`` when a row is hidden or decided (:func:`_state`); on a terminal narrower
    than :data:`NARROW` columns each summary is indented on the line below its row."""
    width = terminal_width() if width is None else width
    states = [_state(c) for c in items]
    cells: list[tuple[Any, ...]] = [(c.get("id", ""), score_text(float(c.get('score') or 0)), c.get("seen", 1),
                                     c.get("kind", ""), speaker_of(c), _project(c), escape_hidden(_proposed(c)),
                                     escape_hidden(str(c.get("summary", "")))) for c in items]
    columns: tuple[str, ...] = _COLUMNS
    wide: tuple[int | None, ...] = (8, 6, 5, 12, 12, 24, 32, None)
    narrow: tuple[int | None, ...] = (8, 6, 5, 10, 8, 16, None)
    if any(states):
        columns = (*_COLUMNS[:3], "state", *_COLUMNS[3:])
        cells = [(*row[:3], state, *row[3:]) for row, state in zip(cells, states, strict=True)]
        wide, narrow = (*wide[:3], 24, *wide[3:]), (*narrow[:3], 16, *narrow[3:])
    if width >= NARROW:
        lines = table([columns, *cells], wide, width)
        out = lines[:1]
        for line, c in zip(lines[1:], items, strict=True):
            out += [line, *_flagged(c, width)]
        return "\n".join(out)
    lines = table([columns[:-1], *(row[:-1] for row in cells)], narrow, width)
    out = [lines[0] + "  (summary below)"]
    for line, row, c in zip(lines[1:], cells, items, strict=True):
        out += [line, "    " + cut(str(row[-1]), max(20, width - 4)), *_flagged(c, width)]
    return "\n".join(out)


def _flagged(c: dict[str, Any], width: int) -> list[str]:
    """A flagged candidate's flags, one indented line each, cut to the terminal (``queue show`` has them whole)."""
    return ["    " + cut(escape_hidden(line), max(20, width - 4)) for line in flag_lines(c)]


def _show(candidate: dict[str, Any]) -> str:
    rows: list[tuple[str, Any]] = [(k, escape_hidden(v) if isinstance(v, str) else v) for k, v in candidate.items()
                                   if k not in ("body", "evidence", "source", "flags", "diff")]
    if isinstance(candidate.get("proposal"), dict):  # the note's whole text is shown below, not in a row
        rows = [(k, {x: y for x, y in v.items() if x != "current"} if k == "proposal" else v) for k, v in rows]
    out = aligned(rows) + "".join(f"\n{escape_hidden(line)}" for line in flag_lines(candidate))
    out += f"\n{escape_hidden(str(candidate.get('body', '')))}\n"
    if candidate.get("diff"):
        out += f"\nwhat changed (held until a person accepts it):\n{escape_hidden(str(candidate['diff']))}\n"
    evidence = candidate.get("evidence") or []
    if candidate.get("kind") == "conflict" and evidence:
        return out + "\n" + "".join(_version(e, label) for e, label in zip(
            evidence, ("the version under review (accepting writes it back)", "the version kept"), strict=False))
    if evidence:
        out += f"\nseen {len(evidence)} time(s):\n"
        for e in evidence:
            pos = e.get("position") or {}
            where = "".join(f", {k} {pos[k] + (k == 'line')}" for k in ("line", "seq")
                            if isinstance(pos.get(k), int))  # a line as editors count it (from 1; stored from 0)
            when = f"{e['at']} " if e.get("at") else ""  # a log without times, a proposal made by hand: none
            project = f" in {e['project']}" if e.get("project") else ""
            out += (f"- {when}{e.get('agent')} {e.get('who')}{project} "
                    f"(session {e.get('sessionId') or '-'}, {e.get('file')}{where})\n"
                    f"  > {escape_hidden(str(e.get('quote', '')))}\n")
    said = proposal_lines(candidate)  # an agent's proposal: who, why, and what accepting changes
    return out + ("\n" + "\n".join(escape_hidden(line) for line in said) + "\n" if said else "")


def _version(e: dict[str, Any], label: str) -> str:
    """One version of a sync conflict: ``- the version kept: commit 3f2a1b9c0d1e by box (root 8c1d…), <time>``."""
    pos = e.get("position") or {}
    who = " ".join(x for x in (pos.get("machine"), f"(root {pos['root'][:8]})" if pos.get("root") else "") if x)
    commit = str(pos.get("uuid") or "-")[:12]
    return (f"- {label}: commit {commit}{f' by {who}' if who else ''}, {e.get('at') or 'time unknown'} "
            f"({e.get('file')})\n  > {escape_hidden(str(e.get('quote', '')))}\n")


def _candidate_id(raw: str) -> str | int:
    return int(raw) if raw.isdigit() else raw


_UNDONE = {"deleted": "; its note deleted", "restored": "; its note's text before the accept restored"}


def _decided(sub: str, cid: str | int, result: dict[str, Any]) -> str:
    """The text of an accept, reject or undo answer (``{ok, candidate, write?, reverted?}``)."""
    if sub == "reject":
        return f"rejected {cid}\n"
    if sub == "undo":
        later = f" (it was edited since: the later text stays in `mmctl log {result.get('topic')}`)" \
            if result.get("laterEdits") else ""
        return f"undone {cid}: pending again{_UNDONE.get(result.get('reverted') or '', '')}{later}\n"
    write = result.get("write") or {}
    if result.get("ok") and "removed" in write:  # a sync conflict whose lost version was the topic's deletion
        return f"accepted {cid}: deleted {write.get('topic', '')}\n"
    if result.get("ok"):
        return f"accepted {cid}: {write.get('action', 'written')} {write.get('uri', '')}\n"
    usage, code = write.get("usage", {}), write.get("code")
    if code == "E_INDEX_BUDGET_EXCEEDED":
        index = usage.get("index") or {}
        figures = (f"MEMORY.md would have {index.get('lines')}/{index.get('lineCap')} lines, "
                   f"{index.get('bytes')}/{index.get('byteCap')} bytes")
        from .advice import index_full_way_out

        fix = index_full_way_out("accept")
    elif code == "E_FILE_BUDGET_EXCEEDED":
        figures = f"{usage.get('noteBytes')}/{usage.get('noteMaxBytes')} bytes"
        fix = "accept it with a shorter --content, or into another --topic"
    else:
        figures = f"{usage.get('bodyChars')}/{usage.get('writeBudget')} chars"
        fix = "accept it with a shorter --content"
    said = str(write.get("message", "the write was refused"))  # the reference's "(see usage…)": the figures follow
    said = said.replace(" (see usage.index)", "").replace(" (see usage)", "")
    return f"not accepted {cid}: {said} ({figures}); the candidate stays pending: {fix}\n"


def _said(error: RpcError) -> str:
    """The daemon's message, with the flags that fix it named the way this command line spells them."""
    if error.code == "E_EXISTS":
        where = error.data.get("uri") or error.data.get("topic") or "the topic"
        return (f"{where} already has a note; accept with --replace to overwrite it, --into T to append to a note, "
                "or --topic T to write elsewhere")
    if error.code == "E_NOT_FOUND" and error.data.get("topic"):  # --into a topic with no note
        return f"{error.message}; `mmctl list` shows the notes, --topic {error.data['topic']} (no --into) creates it"
    return error.message


def _reject(client: Any, cid: str | int, reason: str | None) -> dict[str, Any]:
    """``queue.reject``, refused like an accept of a decided candidate when it was rejected already.

    The daemon's reject is idempotent (a second one changes nothing and answers ``ok``); a person
    asking for it is told it was already rejected, and the exit code is 1 as for accept.

    Raises:
        RpcError(E_DECIDED): the candidate was rejected before this call; as ``queue.reject`` otherwise.
    """
    if client.queue_get(cid).get("status") == "rejected":
        raise RpcError("E_DECIDED", f"candidate {cid} is already rejected; nothing changed", {"status": "rejected"})
    result: dict[str, Any] = client.queue_reject(cid, reason=reason)
    return result


def _report(ctx: Ctx, sub: str, cid: Any, result: dict[str, Any]) -> bool:
    """Print one decision; True when it failed."""
    if ctx.json:
        ctx.print_json(result)
    elif result.get("ok"):
        ctx.write(_decided(sub, cid, result))
    elif "error" in result:
        ctx.error(f"{sub} {cid}: {result['error']['message']}")
    else:
        ctx.error(_decided(sub, cid, result).rstrip("\n"))
    return not result.get("ok")


def _list(ctx: Ctx, client: Any, min_score: float | None) -> int:
    a = ctx.args
    status = a.text("--status") or "pending"
    limit, offset = a.integer("--limit"), a.integer("--offset")
    project = scope_param(ctx)
    result = client.queue_list(status=status, limit=limit or None, offset=offset, all=a.flag("--all"),
                               min_score=min_score, project=project,
                               agent=a.text("--agent"), session=a.text("--session"),
                               first=(ctx.scope().key or _cwd()) if project is None else None)
    listed_hidden = a.flag("--all") or min_score is not None
    filtered = listed_hidden or bool(project or a.text("--agent") or a.text("--session"))
    ctx.write(js_json(result) + "\n" if ctx.json else _queue_table(result, status, offset or 0, filtered,
                                                                   listed_hidden))
    return EXIT_OK


_PAGE = 1000
"""Candidates a ``queue.list`` page asks for while :func:`every_candidate` collects them (the most it gives)."""


def every_candidate(client: Any, **params: Any) -> list[dict[str, Any]]:
    """Every candidate ``queue.list`` gives for ``params`` (``status``, ``all``, ``project`` …), page after page,
    in its order."""
    out: list[dict[str, Any]] = []
    while True:
        page = client.queue_list(limit=_PAGE, offset=len(out), **params)
        items = candidates(page)
        out += items
        if not items or len(out) >= int(page.get("total", 0)):
            return out


def _would_reject(ctx: Ctx, client: Any, below: float) -> int:
    """``queue reject --below S --dry-run``: the pending candidates (hidden ones too) that ``--below S`` would
    reject, lowest score last, as ``queue list`` shows them (``--json``: ``{candidates, total}``); nothing changes."""
    least = shown_at_least(below)  # as shown, to two decimals: the daemon's own test (mmd.wire.scores)
    found = [c for c in every_candidate(client, status="pending", all=True) if float(c.get("score") or 0) < least]
    if ctx.json:
        ctx.write(js_json({"candidates": found, "total": len(found)}) + "\n")
    elif not found:
        ctx.write(f"no pending candidate scores below {below:g}: --below {below:g} would reject none\n")
    else:
        ctx.write(f"--below {below:g} would reject {len(found)} candidate(s); nothing is rejected yet:\n\n"
                  f"{_rows(found)}\n")
    return EXIT_OK


def cmd_queue(ctx: Ctx) -> int:
    """``queue list|show|accept|reject|undo``: the review queue (needs the daemon).

    ``accept``, ``reject`` and ``undo`` take one or more ids; each is decided and reported
    on its own line (``--json``: one JSON line per id), and the exit code is 1
    when any of them failed. ``reject --below S`` rejects every pending candidate scoring below S;
    with ``--dry-run`` it lists them and rejects nothing.
    """
    sub = ctx.rest[0] if ctx.rest else "list"
    ids = ctx.rest[1:]
    below = ctx.args.number("--below") if sub == "reject" else None
    min_score = ctx.args.number("--min-score") if sub == "list" else None
    if sub != "list" and not ids and below is None:
        raise UsageError(f"queue {sub} requires a candidate <id> (see `mmctl queue list`)")
    if sub in ("list", "show") and len(ids) > (0 if sub == "list" else 1):
        raise UsageError(f"queue {sub} takes {'no id' if sub == 'list' else 'one id'} (got {' '.join(ids)})")
    if below is not None and ids:
        raise UsageError("queue reject takes ids or --below, not both")
    a = ctx.args
    content = None
    if sub == "accept":
        from .reference import body_text

        content = body_text(ctx)
    if sub == "list":
        scope_param(ctx)  # a scope that names no one root is refused before the daemon is looked for
    client = ctx.need_daemon("queue").client
    if sub == "list":
        return _list(ctx, client, min_score)
    if sub == "show":
        result = client.queue_get(_candidate_id(ids[0]))
        ctx.write(js_json(result) + "\n" if ctx.json else _show(result))
        return EXIT_OK
    if below is not None and a.flag("--dry-run"):
        return _would_reject(ctx, client, below)
    if a.flag("--dry-run"):
        raise UsageError("--dry-run goes with queue reject --below S")
    if below is not None:
        outcome = client.queue_reject_below(below, reason=a.text("--reason"))
        failed = sum(_report(ctx, sub, r["id"], r) for r in outcome["results"])
        if not outcome["results"] and not ctx.json:
            ctx.write(f"no pending candidate scores below {below:g}\n")
        elif not ctx.json:
            _what_is_left(ctx, client)
        return EXIT_FAILED if failed else EXIT_OK
    return _each(ctx, client, sub, ids, content)


def _what_is_left(ctx: Ctx, client: Any) -> None:
    """After decisions (as text): say so when they emptied the review queue (a decision hands its place to no
    other candidate: a session shows at most its budget, decided ones counted)."""
    if not int(client.queue_list(limit=1).get("total") or 0):
        ctx.write("the review queue is empty: nothing left on show\n")


def _each(ctx: Ctx, client: Any, sub: str, ids: list[str], content: str | None) -> int:
    """``accept``, ``reject`` or ``undo`` of each id, each reported, then (as text) whether the queue is empty now;
    exit 1 when any failed."""
    a = ctx.args
    failed = 0
    target = accept_target(ctx) if sub == "accept" else None
    bulk = sub == "accept" and len(ids) > 1 and not a.flag("--flagged")
    for raw in ids:
        cid = _candidate_id(raw)
        try:
            if bulk and is_flagged(cand := client.queue_get(cid)) and cand.get("status") == "pending":
                result = {"ok": False, "id": cid, "error": {"code": "E_INVALID", "message": _refused_flagged(cand)}}
            elif sub == "accept":
                result = client.queue_accept(cid, topic=a.text("--topic"), content=content, into=a.text("--into"),
                                             summary=a.text("--summary"), tags=a.text("--tags"),
                                             replace=a.flag("--replace"), project=target)
            elif sub == "undo":
                result = client.queue_undo(cid)
            else:
                result = _reject(client, cid, a.text("--reason"))
        except RpcError as error:
            result = {"ok": False, "id": cid, "error": {"code": error.code, "message": _said(error)}}
        failed += _report(ctx, sub, cid, result)
    if not ctx.json and sub != "undo" and failed < len(ids):
        _what_is_left(ctx, client)
    return EXIT_FAILED if failed else EXIT_OK


def _refused_flagged(cand: dict[str, Any]) -> str:
    """Why a bulk accept left a flagged candidate pending, naming its flags and the two ways to accept it."""
    why = "; ".join(line.removeprefix("⚑ ") for line in flag_lines(cand))
    return (f"not accepted: it is flagged ({escape_hidden(why)}); accept it alone (mmctl queue accept {cand['id']}) "
            "or pass --flagged")


def cmd_merge(ctx: Ctx) -> int:
    """``merge A B … --into C``: the notes joined into C (bodies joined, the others deleted, one revision).

    Through the daemon when one owns the root, else through the files under the root's lock.
    """
    topics = list(ctx.rest)
    into = ctx.args.text("--into")
    if not topics or not into:
        raise UsageError("merge requires the notes to merge and --into TOPIC (mmctl merge A B --into C)")
    ctx.need_root()
    daemon = ctx.daemon()
    from mmd.core.errors import MMError

    secret, hidden = ctx.args.flag("--allow-secret"), ctx.args.flag("--allow-hidden")
    try:
        if daemon is not None:
            outcome = daemon.client.merge(topics, into, summary=ctx.args.text("--summary"), allow_secret=secret,
                                          allow_hidden=hidden)
        else:
            outcome = ctx.direct().memory().store.merge(topics, into, summary=ctx.args.text("--summary"),
                                                        allow_secret=secret, allow_hidden=hidden)
    except RpcError as error:
        ctx.error(f"merge: {error.message}")
        return EXIT_FAILED
    except MMError as error:
        ctx.error(f"merge: {error.message}")
        return EXIT_FAILED
    if ctx.json:
        ctx.print_json(outcome)
    elif outcome.get("ok"):
        ctx.write(f"merged {', '.join(outcome['merged'])} into {outcome['topic']} ({outcome['action']})\n")
    else:
        ctx.error(f"merge: {outcome.get('message')} ({outcome.get('code')})")
    return EXIT_OK if outcome.get("ok") else EXIT_FAILED
