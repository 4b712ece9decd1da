"""The review page's POST actions: each one a method call, as RPC makes it, with its outcome told on the page.

Owns: reading an action's form (after the CSRF check), the stale-page rule (a
form carries ``rev``, the revision its page showed; the write methods get it as
``ifRevision``, and a batch checks it once before its first item), and the
outcome sentences (per item for a batch; a budget refusal with its figures,
the candidate still pending). Never: writes a file itself, or decides anything
the methods would not.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from mmd.core.errors import MMError
from mmd.wire.methods import MEMORY_DELETE, MEMORY_READ, MEMORY_WRITE, QUEUE_ACCEPT, QUEUE_GET, QUEUE_REJECT
from mmd.wire.protocol import DaemonCode, DaemonError

from .security import check_csrf
from .views import outcome_text

if TYPE_CHECKING:
    from ..methods import Methods
    from .app import Page

__all__ = ["Actions"]

Call = Callable[["Methods", str, dict[str, Any]], Awaitable[Any]]


def _text(form: Any, key: str) -> str | None:
    """A form field's text, stripped; None when absent or blank."""
    value = form.get(key)
    return value.strip() or None if isinstance(value, str) else None


def _why(error: DaemonError | MMError) -> str:
    """An error as the page says it: in the form's words, never the RPC's (``replace: true``)."""
    if isinstance(error, DaemonError) and error.code == DaemonCode.E_CONFLICT.value:
        return "the memory changed since this page was shown; nothing was changed — look again and retry"
    if isinstance(error, DaemonError) and error.code == DaemonCode.E_EXISTS.value:
        topic = error.data.get("topic")
        return (f"{topic or 'that topic'} already has a note; nothing was changed — give another topic, or "
                "append to it with \"into\"")
    return error.message


def _into_params(existing: dict[str, Any] | None, cand: dict[str, Any], into: str,
                 body: str | None) -> dict[str, Any]:
    """``queue.accept`` params that append the candidate to the note ``into``.

    Where the daemon's ``queue.accept`` takes ``into`` it does the appending; else the note's body
    with the candidate's appended replaces it (``replace``), keeping its summary and tags.

    Raises:
        DaemonError(E_NOT_FOUND): when there is no note ``into`` and the daemon cannot create it.
    """
    if "into" in QUEUE_ACCEPT.params:
        return {"into": into, "content": body}
    if existing is None:
        raise DaemonError(DaemonCode.E_NOT_FOUND, f"there is no note {into!r} any more")
    return {"topic": into, "replace": True, "summary": existing["summary"] or None,
            "content": f"{existing['body'].rstrip()}\n\n{body or cand['body']}"}


class Actions:
    """The POST routes of one page.

    Args:
        page: the page (its methods, gate and outcome store).
        call: calls a method as RPC does (:func:`.app.call`).
    """

    def __init__(self, page: Page, call: Call) -> None:
        self.page = page
        self._call = call

    async def _form(self, request: Request) -> tuple[Any, int | None]:
        """The checked form and the revision its page showed (None when the form has none)."""
        form = await request.form()
        check_csrf(form.get("csrf"), self.page.gate)
        raw = form.get("rev")
        rev = int(raw) if isinstance(raw, str) and raw.isascii() and raw.isdigit() else None
        return form, rev

    def _done(self, form: Any, items: list[dict[str, Any]]) -> Response:
        from .app import back_to

        return back_to(form.get("back"), self.page.flash(items))

    def _stale(self, rev: int | None) -> list[dict[str, Any]] | None:
        current = self.page.methods.state.revision
        if rev is not None and rev == current:
            return None
        return [{"ok": False, "stale": True,
                 "text": f"This page was out of date (it showed revision {rev}, the memory is at {current}); "
                         "nothing was changed. Here is the page as it is now."}]

    async def _accept_one(self, params: dict[str, Any]) -> dict[str, Any]:
        """One ``queue.accept``: ``{ok, text, id}``."""
        cid = params["id"]
        try:
            result = await self._call(self.page.methods, QUEUE_ACCEPT.name, params)
        except (DaemonError, MMError) as error:
            return {"ok": False, "id": cid, "text": f"#{cid}: {_why(error)}"}
        if not result["ok"]:
            return {"ok": False, "id": cid, "text": f"#{cid} " + outcome_text(result["write"].get("topic") or
                                                                           params.get("topic") or "", result["write"])}
        how = "appended to" if params.get("into") else "accepted as"
        return {"ok": True, "id": cid, "text": f"#{cid} {how} {result['write']['topic']}"}

    async def accept(self, request: Request) -> Response:
        """``POST /queue/accept {id, topic?, summary?, tags?, body?, into?, rev}``.

        With ``into`` (an existing topic) the candidate's body is appended to that note, which keeps
        its summary and tags (see :func:`_into_params`); ``into`` sent blank is refused, nothing written
        (the page's select starts on no note); else topic, summary, tags and body as edited on the page.
        """
        form, rev = await self._form(request)
        cid = _text(form, "id") or ""
        into = _text(form, "into")
        params: dict[str, Any] = {"id": cid, "ifRevision": rev}
        if "into" in form and into is None:  # the "Accept into" form sent without a note chosen: nothing is written
            return self._done(form, [{"ok": False, "text": f"#{cid}: choose the note to append to"}])
        if into is not None:
            try:
                params.update(_into_params(await self._call(self.page.methods, MEMORY_READ.name, {"topic": into}),
                                           await self._call(self.page.methods, QUEUE_GET.name, {"id": cid}), into,
                                           _text(form, "body")))
            except (DaemonError, MMError) as error:
                return self._done(form, [{"ok": False, "text": f"#{cid}: {_why(error)}"}])
        else:
            params.update(topic=_text(form, "topic"), summary=_text(form, "summary"),
                          tags=_text(form, "tags"), content=_text(form, "body"))
        return self._done(form, [await self._accept_one(params)])

    async def reject(self, request: Request) -> Response:
        """``POST /queue/reject {id, reason?}``."""
        form, _rev = await self._form(request)
        cid = _text(form, "id") or ""
        try:
            await self._call(self.page.methods, QUEUE_REJECT.name, {"id": cid, "reason": _text(form, "reason")})
        except (DaemonError, MMError) as error:
            return self._done(form, [{"ok": False, "text": f"#{cid}: {_why(error)}"}])
        return self._done(form, [{"ok": True, "text": f"#{cid} rejected"}])

    async def batch(self, request: Request) -> Response:
        """``POST /queue/batch {ids…, action: accept|reject, reason?, rev}``: each item on its own, each told."""
        form, rev = await self._form(request)
        ids = [i for i in form.getlist("ids") if isinstance(i, str) and i]
        action = form.get("action")
        if not ids or action not in ("accept", "reject"):
            return self._done(form, [{"ok": False, "text": "Select candidates, then accept or reject them."}])
        if action == "accept" and (stale := self._stale(rev)) is not None:
            return self._done(form, stale)
        items = []
        for cid in ids:
            if action == "accept":
                items.append(await self._accept_one({"id": cid}))
                continue
            try:
                await self._call(self.page.methods, QUEUE_REJECT.name, {"id": cid, "reason": _text(form, "reason")})
                items.append({"ok": True, "id": cid, "text": f"#{cid} rejected"})
            except (DaemonError, MMError) as error:
                items.append({"ok": False, "id": cid, "text": f"#{cid}: {_why(error)}"})
        done = sum(1 for i in items if i["ok"])
        head = {"ok": done == len(items), "text": f"{action}: {done} of {len(items)} done"}
        return self._done(form, [head, *items])

    async def delete(self, request: Request) -> Response:
        """``POST /memory/delete {topic, rev}`` (the page asked first, inline)."""
        form, rev = await self._form(request)
        topic = _text(form, "topic") or ""
        try:
            await self._call(self.page.methods, MEMORY_DELETE.name, {"topic": topic, "ifRevision": rev})
        except (DaemonError, MMError) as error:
            return self._done(form, [{"ok": False, "text": f"{topic}: {_why(error)}"}])
        return self._done(form, [{"ok": True, "text": f"{topic} deleted"}])

    async def review_date(self, request: Request) -> Response:
        """``POST /memory/review-date {topic, date, rev}``: set (``YYYY-MM-DD`` or ``3m``…) or clear (blank)."""
        form, rev = await self._form(request)
        topic = _text(form, "topic") or ""
        when = _text(form, "date") or ""
        try:
            note = await self._call(self.page.methods, MEMORY_READ.name, {"topic": topic})
            if note is None:
                return self._done(form, [{"ok": False, "text": f"there is no note {topic!r}"}])
            outcome = await self._call(self.page.methods, MEMORY_WRITE.name, {
                "topic": topic, "content": note["body"], "ifRevision": rev, "reviewAfter": when})
        except (DaemonError, MMError) as error:
            return self._done(form, [{"ok": False, "text": f"{topic}: {_why(error)}"}])
        if not outcome["ok"]:
            return self._done(form, [{"ok": False, "text": outcome_text(topic, outcome)}])
        said = f"review date {when}" if when else "review date cleared"
        return self._done(form, [{"ok": True, "text": f"{topic}: {said}"}])
