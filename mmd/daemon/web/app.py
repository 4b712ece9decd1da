"""The review page's routes: ``Starlette(routes=[…], middleware=[…])`` over the daemon's method table.

Owns: the pages (queue ``/``, a candidate ``/queue/{id}`` with its edit form,
memory ``/memory``, a note ``/note/{topic}`` and its edit form
``/note/{topic}/edit``, status ``/status``), the live events ``/events``, two
named static files, and the POST actions (accept, accept into a topic, reject,
a batch, a note's edit, delete, review date). Every action calls the same methods as RPC (:func:`call`: params
checked by :func:`mmd.wire.methods.check_params`, then the handler), so
budgets, compare-and-set and the journal hold; a form carries the revision its
page showed, and a revision that moved makes the action refused as *stale*
instead of overwriting. An action answers ``303`` back to its page, whose next
render shows the outcome (per item for a batch). Errors are pages with their
status, never a traceback. Never: reads or writes a path given by a request
(topics are validated slugs; static files are named in :data:`STATIC`).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections import OrderedDict
from collections.abc import Callable
from importlib.resources import files
from typing import Any
from urllib.parse import urlencode

import jinja2
import markupsafe
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from mmd.candidates.labels import (
    action_words,
    flag_lines,
    proposal_lines,
    quote_besides,
    speaker_words,
    summary_besides,
)
from mmd.core.errors import ErrorCode, MMError
from mmd.screen.hidden import escape_hidden
from mmd.wire.methods import (
    DAEMON_STATUS,
    MEMORY_INDEX,
    MEMORY_READ,
    MEMORY_SEARCH,
    MEMORY_WRITE,
    QUEUE_GET,
    QUEUE_LIST,
    check_params,
)
from mmd.wire.protocol import DaemonCode, DaemonError
from mmd.wire.scores import score_text

from ..methods import Methods
from ..state import MemoryState
from .actions import Actions
from .markdown import Markdown, cut_text
from .security import Gate, GateMiddleware, Refused
from .sse import EventStreams
from .views import CANDIDATE_GROUPS, ENTRY_GROUPS, candidate_groups, entry_groups, provenance, review_after_of

__all__ = ["CARD_CHARS", "CHANGE_LINES", "PAGE_SIZE", "QUOTE_CHARS", "STATIC", "Page", "back_to", "build_app", "call",
           "local_path", "templates"]

PAGE_SIZE = 100
"""Candidates on one queue page."""
CARD_CHARS = 600
"""Most code points of a body a queue card shows (cut at a word; the candidate's page has it all)."""
QUOTE_CHARS = 120
"""Most code points of an evidence quote a queue card shows (only a quote that says more than the body)."""
CHANGE_LINES = 12
"""Most lines of what accepting an agent's proposal changes (who and why, the diff) a queue card shows (the
candidate's page has them all)."""
STATIC = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
"""The static files, by name (nothing else is served from the package)."""
FLASHES_KEPT = 64
"""Outcomes kept for the page after an action (oldest forgotten first)."""

_STATUS_OF = {ErrorCode.E_INVALID.value: 400, DaemonCode.E_NOT_FOUND.value: 404, DaemonCode.E_UNAVAILABLE.value: 503,
              DaemonCode.E_CONFLICT.value: 409}

log = logging.getLogger("mmd.web")


async def call(methods: Methods, name: str, params: dict[str, Any]) -> Any:
    """Call ``name`` as RPC would: params checked against the wire's table, then its handler.

    Raises:
        DaemonError, MMError: as the method.
    """
    checked = check_params(name, params)
    inline = methods.inline.get(name)
    if inline is not None:
        return inline(checked)
    return await methods.awaited[name](checked)


class Page:
    """Renders the templates; keeps the outcomes of actions until their page shows them.

    Args:
        methods: the method table. gate: the page's gate (its CSRF token goes into every form).
        events: the event streams (the status view lists the last events).
    """

    def __init__(self, methods: Methods, gate: Gate, events: EventStreams) -> None:
        self.methods, self.gate, self.events = methods, gate, events
        self.env = templates(lambda: self.methods.state.options.memory_id)
        # read once, at start, before the page serves anything: each request then sends these bytes (no file I/O
        # on the loop, so nothing for aiofiles)
        self.static = {name: (files("mmd.daemon.web") / "static" / name).read_bytes() for name in STATIC}
        self.flashes: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self._flash_ids = itertools.count(1)

    def flash(self, items: list[dict[str, Any]]) -> str:
        """Keep ``items`` (``{ok, text}``) for the next render; returns their id for the redirect."""
        fid = str(next(self._flash_ids))
        self.flashes[fid] = items
        while len(self.flashes) > FLASHES_KEPT:
            self.flashes.popitem(last=False)
        return fid

    def render(self, template: str, request: Request | None, http_status: int = 200, **values: Any) -> HTMLResponse:
        """The template rendered with the common values (revision, CSRF token, outcomes to show)."""
        return HTMLResponse(self.html(template, request, **values), status_code=http_status)

    def html(self, template: str, request: Request | None, **values: Any) -> str:
        """The template's HTML (what :meth:`render` sends)."""
        fid = request.query_params.get("flash", "") if request is not None else ""
        common = {"rev": self.methods.home.revision, "csrf": self.gate.csrf, "flash": self.flashes.get(fid, []),
                  "path": request.url.path if request is not None else "/", "review_dates": _review_dates()}
        return self.env.get_template(template).render(**common, **values)

    def error_page(self, status: int, message: str) -> bytes:
        """An error as a page (no traceback)."""
        return self.env.get_template("error.html").render(status=status, message=message, rev=None,
                                                          flash=[], path="").encode()

    # --- pages -----------------------------------------------------------------------------------

    async def queue(self, request: Request) -> Response:
        """``GET /?group=project|session|kind&offset=N&all=1&session=ID``: pending candidates by score, grouped;
        ``session``: one agent session's, hidden ones too."""
        group = request.query_params.get("group", "project")
        group = group if group in CANDIDATE_GROUPS else "project"
        offset = _int(request.query_params.get("offset"), 0)
        show_all = request.query_params.get("all") == "1"
        session = request.query_params.get("session") or None
        return self.render("queue.html", request, **await self.queue_values(group, offset, show_all, session))

    async def queue_values(self, group: str, offset: int, show_all: bool = False,
                           session: str | None = None) -> dict[str, Any]:
        """The queue template's values: ``{group, groups, page, topics, offset, unavailable, show_all, session,
        back}``.

        ``show_all`` lists the hidden candidates too, where ``queue.list`` takes ``all``; ``session`` lists one
        agent session's candidates, hidden ones included (a session's "show more").
        """
        unavailable: str | None = None
        can_show_hidden = "all" in QUEUE_LIST.params
        params: dict[str, Any] = {"status": "pending", "limit": PAGE_SIZE, "offset": offset}
        if session is not None and "session" in QUEUE_LIST.params:
            params["session"], show_all = session, True
        if show_all and can_show_hidden:
            params["all"] = True
        try:
            page = await call(self.methods, QUEUE_LIST.name, params)
        except DaemonError as error:
            if error.code != DaemonCode.E_UNAVAILABLE.value:
                raise
            page, unavailable = {"candidates": [], "total": 0, "pending": 0}, error.message
        topics = [e.topic for e in self.methods.state.current.entries]
        here = {"group": group, "offset": offset, **({"all": 1} if show_all else {}),
                **({"session": session} if "session" in params else {})}
        return {"group": group, "groups": candidate_groups(page["candidates"], group), "page": page,
                "topics": sorted(topics), "offset": offset, "page_size": PAGE_SIZE, "unavailable": unavailable,
                "groupings": CANDIDATE_GROUPS, "show_all": show_all, "can_show_hidden": can_show_hidden,
                "session": session if "session" in params else None, "card_chars": CARD_CHARS,
                "quote_chars": QUOTE_CHARS, "change_lines": CHANGE_LINES, "back": f"/?{urlencode(here)}"}

    async def candidate(self, request: Request) -> Response:
        """``GET /queue/{id}?back=PATH``: one candidate, all its evidence, and (pending) its edit form."""
        raw = request.path_params["id"]
        if not (raw.isascii() and raw.isdigit()):
            raise HTTPException(404, f"No candidate {raw!r} in the review queue.")
        return self.render("candidate.html", request,
                           **await self.candidate_values(raw, local_path(request.query_params.get("back"))))

    async def candidate_values(self, cid: str, back: str, kept: dict[str, str] | None = None,
                               problem: str | None = None) -> dict[str, Any]:
        """The candidate template's values: ``{c, kept, problem, notes, write_budget, back}``; ``kept`` the edit
        form's fields as sent (a refused accept shows them again), else the candidate's own.

        Raises:
            DaemonError(E_NOT_FOUND | E_INVALID | E_UNAVAILABLE): as ``queue.get``.
        """
        cand = await call(self.methods, QUEUE_GET.name, {"id": cid})
        proposal = cand.get("proposal") or {}
        into = str(proposal.get("topic") or "") if proposal.get("action") == "append" else ""
        root = self.methods.home.get(str(cand.get("scope") or "user"))  # the notes of the root it goes to
        own = {"topic": cand["topic"], "summary": _summary_shown(cand, root.state if root is not None else None),
               "tags": "", "body": cand["body"], "into": into}
        entries = root.state.current.entries if root is not None else ()
        notes = sorted((e.to_json() for e in entries), key=lambda e: e["topic"])
        return {"c": cand, "kept": {**own, **(kept or {})}, "problem": problem, "notes": notes, "back": back,
                "write_budget": self.methods.state.options.default_write_budget}

    async def memory(self, request: Request) -> Response:
        """``GET /memory?group=tag|date|due&q=…``: the index grouped, budget meters, search results."""
        group = request.query_params.get("group", "tag")
        group = group if group in ENTRY_GROUPS else "tag"
        index = await call(self.methods, MEMORY_INDEX.name, {})
        query = request.query_params.get("q", "").strip()
        found = await call(self.methods, MEMORY_SEARCH.name, {"query": query}) if query else None
        for entry in index["entries"]:
            entry["reviewAfter"] = review_after_of(entry)
        return self.render("memory.html", request, index=index, group=group, groupings=ENTRY_GROUPS,
                           groups=entry_groups(index["entries"], group), query=query, found=found)

    async def note(self, request: Request) -> Response:
        """``GET /note/{topic}``: a note's full text (the topic is a validated slug, never a path).

        The text comes from the current revision's snapshot, held in memory: no note file is read on the loop.
        """
        note = await call(self.methods, MEMORY_READ.name, {"topic": request.path_params["topic"]})
        if note is None:
            raise HTTPException(404, f"No note {request.path_params['topic']!r} in this memory.")
        note["reviewAfter"] = review_after_of(note)
        return self.render("note.html", request, note=note)

    async def note_edit(self, request: Request) -> Response:
        """``GET /note/{topic}/edit``: a note's text in a form, with its write budget and the caps it must fit."""
        note = await call(self.methods, MEMORY_READ.name, {"topic": request.path_params["topic"]})
        if note is None:
            raise HTTPException(404, f"No note {request.path_params['topic']!r} in this memory.")
        return self.render("note_edit.html", request, **await self.note_edit_values(note))

    async def note_edit_values(self, note: dict[str, Any], kept: dict[str, Any] | None = None,
                               problem: str | None = None, base: str | None = None) -> dict[str, Any]:
        """The note edit template's values: ``{note, kept, problem, base, index, note_max_bytes}``; ``base`` is the
        sha256 of the text the form started from (an edit of a note changed meanwhile is refused)."""
        own = {"summary": note.get("summary") or "", "tags": ", ".join(note.get("tags") or []), "body": note["body"],
               "budget": note.get("writeBudget") or self.methods.state.options.default_write_budget}
        return {"note": note, "kept": {**own, **(kept or {})}, "problem": problem,
                "base": base or body_sha(note["body"]), "index": await call(self.methods, MEMORY_INDEX.name, {}),
                "note_max_bytes": self.methods.state.options.detail_max_bytes}

    async def status(self, request: Request) -> Response:
        """``GET /status``: the daemon, its sources and ingestion, revision, queue counts, the last events."""
        status = await call(self.methods, DAEMON_STATUS.name, {})
        return self.render("status.html", request, status=status, recent=list(reversed(self.events.recent)))

    async def events_stream(self, request: Request) -> Response:
        """``GET /events``: Server-Sent Events (see :mod:`.sse`)."""
        return StreamingResponse(self.events.stream(), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    async def static_file(self, request: Request) -> Response:
        """``GET /static/{name}``: one of :data:`STATIC`, else 404."""
        name = request.path_params["name"]
        if name not in STATIC:
            raise HTTPException(404, "No such file.")
        return Response(self.static[name], media_type=STATIC[name])


def templates(memory_id: Callable[[], str]) -> jinja2.Environment:
    """The page's templates (autoescaped) with its filters: ``markdown`` (a body as safe HTML, links to notes of
    ``memory_id``'s memory), ``cut`` (:func:`.markdown.cut_text`), ``provenance``, ``summary_besides``,
    ``quote_besides``, ``flag_lines``, ``speaker_words``, ``action_words`` and ``proposal_lines``
    (:mod:`mmd.candidates.labels`), ``shown``, ``score`` (:func:`mmd.wire.scores.score_text`); hidden text
    is shown escaped wherever text is shown (``\\u{202E}``, :func:`mmd.screen.hidden.escape_hidden`)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("mmd.daemon.web", "templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True)
    markdown = Markdown(memory_id)
    env.filters.update(markdown=lambda text: markupsafe.Markup(markdown.render(escape_hidden(str(text)))),
                       cut=cut_text, provenance=provenance, summary_besides=lambda c: _escaped(summary_besides(c)),
                       quote_besides=lambda c: _escaped(quote_besides(c)), flag_lines=flag_lines,
                       speaker_words=speaker_words, action_words=action_words, proposal_lines=proposal_lines,
                       shown=lambda text: escape_hidden(str(text)), score=lambda s: score_text(float(s)))
    return env


def _summary_shown(cand: dict[str, Any], state: MemoryState | None) -> str:
    """The summary a candidate's edit form starts with: the candidate's own, or for an agent's ``replace`` without
    a summary of its own the note's (accepting it unchanged keeps the note's index line: :mod:`..proposed`)."""
    from mmd.candidates.proposals import is_proposal, summary_to_write

    summary = str(cand.get("summary") or "")
    if state is None or not is_proposal(cand.get("rule")) or (cand.get("proposal") or {}).get("action") != "replace":
        return summary
    note = state.current.note(cand["topic"])
    return summary if note is None or summary_to_write(summary, cand["body"]) is not None else note.entry.summary


def _escaped(text: str | None) -> str | None:
    return None if text is None else escape_hidden(text)


def body_sha(body: str) -> str:
    """The sha256 (hex) of a note's body as UTF-8: what an edit form started from."""
    return hashlib.sha256(body.encode()).hexdigest()


def local_path(raw: object) -> str:
    """``raw`` when it is a path of this page (``/…``, not ``//host`` nor with a backslash), else ``/``."""
    ok = isinstance(raw, str) and raw.startswith("/") and not raw.startswith("//") and "\\" not in raw
    return raw if ok and isinstance(raw, str) else "/"


def _review_dates() -> bool:
    """Whether ``memory.write`` takes ``reviewAfter`` (the review-date form shows only then)."""
    return "reviewAfter" in MEMORY_WRITE.params


def _int(raw: str | None, default: int) -> int:
    return int(raw) if raw is not None and raw.isascii() and raw.isdigit() else default


def build_app(methods: Methods, gate: Gate, events: EventStreams) -> Starlette:
    """The page's ASGI application behind its gate.

    Args:
        methods: the daemon's method table. gate: token, Host, Origin and CSRF checks.
        events: the live event streams.
    """
    page = Page(methods, gate, events)
    actions = Actions(page, call)

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "Something went wrong."
        return HTMLResponse(page.error_page(status, str(detail)), status_code=status)

    async def domain_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, Refused):
            return HTMLResponse(page.error_page(exc.status, exc.message), status_code=exc.status)
        code = exc.code if isinstance(exc, DaemonError) else exc.code.value if isinstance(exc, MMError) else ""
        message = exc.message if isinstance(exc, DaemonError | MMError) else "Something went wrong."
        return HTMLResponse(page.error_page(_STATUS_OF.get(code, 500), message),
                            status_code=_STATUS_OF.get(code, 500))

    async def crash(request: Request, exc: Exception) -> Response:
        log.exception("web.error path=%s", request.url.path, exc_info=exc)
        return HTMLResponse(page.error_page(500, "Something went wrong; the daemon's log has the details."),
                            status_code=500)

    routes = [
        Route("/", page.queue, methods=["GET"]),
        Route("/memory", page.memory, methods=["GET"]),
        Route("/queue/{id}", page.candidate, methods=["GET"]),
        Route("/note/{topic}", page.note, methods=["GET"]),
        Route("/note/{topic}/edit", page.note_edit, methods=["GET"]),
        Route("/status", page.status, methods=["GET"]),
        Route("/events", page.events_stream, methods=["GET"]),
        Route("/static/{name}", page.static_file, methods=["GET"]),
        Route("/queue/accept", actions.accept, methods=["POST"]),
        Route("/queue/reject", actions.reject, methods=["POST"]),
        Route("/queue/batch", actions.batch, methods=["POST"]),
        Route("/memory/edit", actions.edit_note, methods=["POST"]),
        Route("/memory/delete", actions.delete, methods=["POST"]),
        Route("/memory/review-date", actions.review_date, methods=["POST"]),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(GateMiddleware, gate=gate, refused=lambda r: page.error_page(r.status, r.message))],
        exception_handlers={HTTPException: http_error, Refused: domain_error, DaemonError: domain_error,
                            MMError: domain_error, Exception: crash})


def back_to(raw: object, flash: str) -> RedirectResponse:
    """``303`` to the page the form came from (a local path only), with the outcome's id."""
    path = local_path(raw)
    base, _, query = path.partition("?")
    kept = [kv for kv in query.split("&") if kv and not kv.startswith("flash=") and not kv.startswith("token=")]
    return RedirectResponse(f"{base}?{'&'.join([*kept, urlencode({'flash': flash})])}", status_code=303)

