"""``mmctl queue list|show|accept|reject``: the daemon's review queue (needs the daemon).

Text output is a table for ``list`` and aligned ``key  value`` rows for
``show``; ``--json`` prints the daemon's ``queue.*`` value as one line of JSON.
"""

from __future__ import annotations

from typing import Any

from ..errors import RpcError
from ..render import candidates
from .output import EXIT_FAILED, EXIT_OK, Ctx, aligned, js_json
from .parser import UsageError

__all__ = ["cmd_queue"]


def _queue_table(result: Any, status: str) -> str:
    items = candidates(result)
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


def _said(error: RpcError) -> str:
    """The daemon's message, with the flags that fix it named the way this command line spells them."""
    if error.code == "E_EXISTS":
        where = error.data.get("uri") or error.data.get("topic") or "the topic"
        return f"{where} already has a note; accept with --replace to overwrite it, or --topic T to write elsewhere"
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


def cmd_queue(ctx: Ctx) -> int:
    """``queue list|show|accept|reject``: the review queue (needs the daemon).

    ``accept`` and ``reject`` take one or more ids; each is decided and reported
    on its own line (``--json``: one JSON line per id), and the exit code is 1
    when any of them failed.
    """
    sub = ctx.rest[0] if ctx.rest else "list"
    ids = ctx.rest[1:]
    if sub != "list" and not ids:
        raise UsageError(f"queue {sub} requires a candidate <id> (see `mmctl queue list`)")
    if sub in ("list", "show") and len(ids) > (0 if sub == "list" else 1):
        raise UsageError(f"queue {sub} takes {'no id' if sub == 'list' else 'one id'} (got {' '.join(ids)})")
    a = ctx.args
    limit, offset = a.integer("--limit"), a.integer("--offset")
    content = None
    if sub == "accept":
        from .reference import body_text

        content = body_text(ctx)
    client = ctx.need_daemon("queue").client
    if sub == "list":
        status = a.text("--status") or "pending"
        result = client.queue_list(status=status, limit=limit or None, offset=offset)
        ctx.write(js_json(result) + "\n" if ctx.json else _queue_table(result, status))
        return EXIT_OK
    if sub == "show":
        result = client.queue_get(_candidate_id(ids[0]))
        ctx.write(js_json(result) + "\n" if ctx.json else _show(result))
        return EXIT_OK
    failed = 0
    for raw in ids:
        cid = _candidate_id(raw)
        try:
            if sub == "accept":
                result = client.queue_accept(cid, topic=a.text("--topic"), content=content,
                                             summary=a.text("--summary"), tags=a.text("--tags"),
                                             replace=a.flag("--replace"))
            else:
                result = _reject(client, cid, a.text("--reason"))
        except RpcError as error:
            result = {"ok": False, "id": cid, "error": {"code": error.code, "message": _said(error)}}
        failed += not result.get("ok")
        if ctx.json:
            ctx.print_json(result)
        elif result.get("ok"):
            ctx.write(_decided(sub, cid, result))
        elif "error" in result:
            ctx.error(f"{sub} {cid}: {result['error']['message']}")
        else:
            ctx.error(_decided(sub, cid, result).rstrip("\n"))
    return EXIT_FAILED if failed else EXIT_OK
