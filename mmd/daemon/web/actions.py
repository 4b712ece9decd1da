"""The review page's POST actions: each one a method call, as RPC makes it, with its outcome told on the page.

Owns: reading an action's form (after the CSRF check), the stale-page rule (a
form carries ``rev``, the revision its page showed; the write methods get it as
``ifRevision``, and a batch checks it once before its first item), and the
outcome sentences (per item for a batch; a budget refusal with its figures,
the candidate still pending). An edit form (a candidate's ``edit=1``, a note's
``/memory/edit``) that is refused is shown again with the text as sent and the
reason, never lost in a redirect; a note's edit is refused when the note
changed since its form was shown (``base``, the sha256 of the text it started
from). Never: writes a file itself, or decides anything the methods would not.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

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
    """A form field's text, stripped, its line breaks LF (a browser sends a textarea's as CRLF); None when absent
    or blank."""
    value = form.get(key)
    return value.replace("\r\n", "\n").strip() or None if isinstance(value, str) else None


def _kept(form: Any, keys: tuple[str, ...]) -> dict[str, str]:
    """The form's fields ``keys`` as sent (line breaks LF), to show them again; "" for an absent one."""
    return {k: str(form.get(k) or "").replace("\r\n", "\n") for k in keys}


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
        current = self.page.methods.home.revision  # every root's: a page shows candidates of all of them
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
        how = "appended to" if params.get("into") or result["write"].get("action") == "updated" else "accepted as"
        return {"ok": True, "id": cid, "text": f"#{cid} {how} {result['write']['topic']}"}

    async def accept(self, request: Request) -> Response:
        """``POST /queue/accept {id, topic?, summary?, tags?, body?, into?, edit?, rev}``.

        With ``into`` (an existing topic) the candidate's body is appended to that note, which keeps
        its summary and tags (see :func:`_into_params`); ``into`` blank or absent writes under
        ``topic``; topic, summary, tags and body as edited on the page. From the candidate's edit form
        (``edit=1``) a refusal shows the form again with the fields as sent and the reason (its figures).
        """
        form, rev = await self._form(request)
        if rev is not None and (stale := self._stale(rev)) is not None:
            return self._done(form, stale)
        cid = _text(form, "id") or ""
        into = _text(form, "into")
        params: dict[str, Any] = {"id": cid}  # written to its own root; the page's revision was checked above
        if into is not None:
            try:
                cand = await self._call(self.page.methods, QUEUE_GET.name, {"id": cid})
                note = await self._call(self.page.methods, MEMORY_READ.name,
                                        {"topic": into, "project": cand.get("scope") or "user"})
                params.update(_into_params(note, cand, into, _text(form, "body")))
            except (DaemonError, MMError) as error:
                return await self._refused(request, form, [{"ok": False, "text": f"#{cid}: {_why(error)}"}])
        else:
            params.update(topic=_text(form, "topic"), summary=_text(form, "summary"),
                          tags=_text(form, "tags"), content=_text(form, "body"))
        outcome = await self._accept_one(params)
        return self._done(form, [outcome]) if outcome["ok"] else await self._refused(request, form, [outcome])

    async def _refused(self, request: Request, form: Any, items: list[dict[str, Any]]) -> Response:
        """A refused accept: from the edit form, that form again with its fields and the reason; else the redirect."""
        if form.get("edit") != "1":
            return self._done(form, items)
        from .app import local_path

        kept = _kept(form, ("topic", "summary", "tags", "body", "into"))
        values = await self.page.candidate_values(_text(form, "id") or "", local_path(form.get("back")), kept,
                                                  items[0]["text"].replace("still pending", "still pending, your "
                                                                           "text is kept below"))
        return self.page.render("candidate.html", request, **values)

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
        """``POST /queue/batch {ids…, action: accept|reject, reason?, rev}``: each item on its own, each told; a batch
        of several accepts no flagged candidate (it is told why and stays pending)."""
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
                try:  # a batch takes no flagged candidate (issue 29): each has its own Accept button
                    if len(ids) > 1:
                        await self.page.methods.review.refuse_flagged(cid)
                except (DaemonError, MMError) as error:
                    items.append({"ok": False, "id": cid, "text": f"#{cid}: {_why(error)}"})
                    continue
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

    async def edit_note(self, request: Request) -> Response:
        """``POST /memory/edit {topic, body, summary, tags, budget, base, rev}``: the note's new text.

        Written under ``budget`` (the form shows the note's own; a positive integer) when the note is
        still the text the form started from (``base``); a refusal (over a budget, the note changed,
        the memory moved meanwhile) shows the form again with the text as sent and the reason.
        """
        from .app import body_sha

        form, _rev = await self._form(request)
        topic = _text(form, "topic") or ""
        kept = _kept(form, ("summary", "tags", "body", "budget"))
        raw_budget = kept["budget"].strip()
        budget = int(raw_budget) if raw_budget.isascii() and raw_budget.isdigit() and int(raw_budget) > 0 else None
        try:
            note = await self._call(self.page.methods, MEMORY_READ.name, {"topic": topic})
        except (DaemonError, MMError) as error:
            return self._done(form, [{"ok": False, "text": f"{topic}: {_why(error)}"}])
        if note is None:
            return self._done({"back": "/memory"}, [{"ok": False, "text": f"there is no note {topic!r} any more"}])
        base = str(form.get("base") or "")
        if base != body_sha(note["body"]):
            return await self._edit_again(request, note, kept, f"{topic} changed since this form was shown; nothing "
                                          "was written — your text is kept below: compare it with the note, then "
                                          "save", base=body_sha(note["body"]))
        try:
            outcome = await self._call(self.page.methods, MEMORY_WRITE.name, {
                "topic": topic, "content": kept["body"], "summary": kept["summary"], "tags": kept["tags"],
                "budget": budget or note.get("writeBudget"), "ifRevision": self.page.methods.state.revision})
        except (DaemonError, MMError) as error:
            return await self._edit_again(request, note, kept, f"{topic}: {_why(error)}; your text is kept below",
                                          base)
        if not outcome["ok"]:
            return await self._edit_again(request, note, kept, outcome_text(topic, outcome, "your text is kept below"),
                                          base)
        usage = outcome["usage"]
        return self._done({"back": f"/note/{topic}"}, [{"ok": True, "text": f"{topic} saved: {usage['bodyChars']}/"
                                                        f"{usage['writeBudget']} characters"}])

    async def _edit_again(self, request: Request, note: dict[str, Any], kept: dict[str, str], problem: str,
                          base: str | None = None) -> HTMLResponse:
        values = await self.page.note_edit_values(note, {k: v for k, v in kept.items() if v or k != "budget"},
                                                  problem, base)
        return self.page.render("note_edit.html", request, **values)

    async def delete(self, request: Request) -> Response:
        """``POST /memory/delete {topic, rev}`` (the page asked first, inline)."""
        form, rev = await self._form(request)
        topic = _text(form, "topic") or ""
        if rev is not None and (stale := self._stale(rev)) is not None:
            return self._done(form, stale)
        try:
            await self._call(self.page.methods, MEMORY_DELETE.name,
                             {"topic": topic, "ifRevision": self.page.methods.state.revision})
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
            if rev is not None and (stale := self._stale(rev)) is not None:
                return self._done(form, stale)
            outcome = await self._call(self.page.methods, MEMORY_WRITE.name, {
                "topic": topic, "content": note["body"], "ifRevision": self.page.methods.state.revision,
                "reviewAfter": when})
        except (DaemonError, MMError) as error:
            return self._done(form, [{"ok": False, "text": f"{topic}: {_why(error)}"}])
        if not outcome["ok"]:
            return self._done(form, [{"ok": False, "text": outcome_text(topic, outcome)}])
        said = f"review date {when}" if when else "review date cleared"
        return self._done(form, [{"ok": True, "text": f"{topic}: {said}"}])
