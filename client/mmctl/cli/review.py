"""``mmctl review``: pending candidates one at a time in the terminal, decided with single keys.

Keys, the review page's own (``j``/``k``/``a``/``r``/``e``) and more: ``j`` next
(``s`` too: skip), ``k`` previous, ``a`` accept, ``e`` edit then accept
(``$VISUAL``/``$EDITOR`` on topic, summary, tags and body, like ``git commit``),
``i`` accept into an existing topic (its note gets the body appended), ``r``
reject (a reason may follow), ``u`` undo the last decision (``queue.undo``: an
accepted note is deleted or its previous text restored by the daemon, and the
candidate is pending again), ``q`` quit. A candidate is shown as the page shows
a card: its body once, wrapped at words to the terminal's width (wide characters
take two columns), the summary and an evidence quote only where they say
something the body does not (:mod:`mmd.candidates.labels`), and one line of
where it was said, who said it (the person, the agent, a summary, a remote, an
outside edit) and, in red, each flag with its why (hidden text shown escaped).
Candidates come in ``mmctl queue list``'s order (the current folder's project's
first, then by score, flagged ones last), filtered by ``--project``, ``--agent``
and ``--min-score``; at the end of the list, the ones that came in meanwhile
follow. A card names the root it goes to when that is not the current folder's
(its project's, else the user root), and what accepting does (append, replace the
text, delete the note: an agent's proposal shows who, why and the diff); ``e`` on
a proposal to delete opens no editor (it has no text: accept or reject it).
Colours only on a terminal and without ``NO_COLOR``; on a terminal a key needs
no Enter, otherwise one key per line is read. Every decision is an RPC call (needs the daemon). Never: writes a memory
file itself.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from mmd.candidates.labels import (
    flag_lines,
    project_of,
    proposal_lines,
    quote_besides,
    speaker_words,
    summary_besides,
)
from mmd.screen.hidden import escape_hidden
from mmd.wire.methods import QUEUE_ACCEPT
from mmd.wire.scores import score_text

from ..errors import RpcError
from ..render import terminal_width, wrap
from .output import EXIT_OK, Ctx
from .queue import every_candidate

__all__ = ["KEYS", "cmd_review", "edit_text", "parse_edited"]

KEYS = "[j] next  [k] previous  [a]ccept  [e]dit  [i]nto topic  [r]eject  [u]ndo  [q]uit"
"""The prompt (``s`` skips as ``j`` does)."""
SHORT_KEYS = "j/k a e i r u [q]uit"
"""The prompt on a terminal too narrow for :data:`KEYS`."""


def _pending(client: Any, ctx: Ctx) -> list[dict[str, Any]]:
    """Every pending candidate the filters keep, in ``mmctl queue list``'s order (``queue.list`` filters; without
    ``--project`` the current folder's project's candidates first)."""
    a = ctx.args
    project = a.text("--project")
    return every_candidate(client, status="pending", project=project, agent=a.text("--agent"),
                           min_score=a.number("--min-score"), first=None if project else _here(ctx))


def _here(ctx: Ctx) -> str | None:
    """The current folder's project key, else the folder itself (the daemon knows where agent sessions ran)."""
    try:
        return ctx.scope().key or os.getcwd()
    except OSError:
        return None


def _root_words(ctx: Ctx, cand: dict[str, Any]) -> str:
    """``· to root gamma-5e6f7a8b, not this folder's (beta-1a2b3c4d)`` when the candidate is proposed to another root
    than the current folder's (its project's, else ``user``); "" when it is that root's, or it names none."""
    scope = cand.get("scope")
    here = ctx.scope().key or "user"
    return f"· to root {scope}, not this folder's ({here})" if isinstance(scope, str) and scope != here else ""


def edit_text(cand: dict[str, Any], summary: str | None = None) -> str:
    """The text ``$EDITOR`` opens: ``topic:``, ``summary:`` (``summary``, default the candidate's), ``tags:`` lines, a
    blank line, the body."""
    summary = str(cand.get("summary", "")) if summary is None else summary
    return (f"topic: {cand.get('topic', '')}\nsummary: {summary}\ntags: {cand.get('tags', '') or ''}\n"
            "# Edit the fields and the body below the blank line; lines starting with # are dropped.\n"
            "# An empty body accepts nothing.\n\n" + str(cand.get("body", "")).rstrip("\n") + "\n")


def parse_edited(text: str) -> dict[str, str]:
    """``{topic, summary, tags, body}`` from :func:`edit_text`'s shape, as edited (``body`` may be empty)."""
    head, _, body = text.partition("\n\n")
    fields = {"topic": "", "summary": "", "tags": ""}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in fields and not line.startswith("#"):
            fields[key.strip()] = value.strip()
    kept = "\n".join(line for line in body.splitlines() if not line.startswith("#")).strip("\n")
    return {**fields, "body": kept}


def _run_editor(ctx: Ctx, text: str) -> str | None:
    """``text`` after ``$VISUAL``/``$EDITOR`` (default ``vi``) edited it; None when the editor failed."""
    import subprocess
    import tempfile

    editor = ctx.env.get("VISUAL") or ctx.env.get("EDITOR") or "vi"
    with tempfile.NamedTemporaryFile("w", suffix=".mmd-review.txt", delete=False, encoding="utf-8") as f:
        f.write(text)
        path = f.name
    try:
        done = subprocess.run(["/bin/sh", "-c", f'{editor} "$1"', editor, path], env=dict(ctx.env), check=False)
        if done.returncode != 0:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read()
    finally:
        os.unlink(path)


class _Screen:
    """What the loop prints and reads: colours only on a terminal without ``NO_COLOR``."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.tty = sys.stdin.isatty() and ctx.stdin is None
        self.colour = self.tty and ctx.out.isatty() and not ctx.env.get("NO_COLOR")
        self.width = terminal_width()

    def style(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def say(self, text: str) -> None:
        self.ctx.write(text + "\n")
        self.ctx.out.flush()

    def key(self) -> str:
        """One key: without Enter on a terminal, else the first character of the next line (EOF = quit)."""
        self.ctx.out.write(f"{KEYS if len(KEYS) + 3 <= self.width else SHORT_KEYS} > ")
        self.ctx.out.flush()
        if self.tty:
            import termios
            import tty

            fd = sys.stdin.fileno()
            old = termios.tcgetattr(fd)
            try:
                tty.setcbreak(fd)
                ch = os.read(fd, 4).decode(errors="replace")[:1]
            finally:
                termios.tcsetattr(fd, termios.TCSADRAIN, old)
            self.ctx.out.write(ch + "\n")
            return ch.lower() or "q"
        line = self.line("")
        return (line.strip()[:1] or "?").lower() if line is not None else "q"

    def line(self, prompt: str) -> str | None:
        """A line of text (None at EOF)."""
        if prompt:
            self.ctx.out.write(prompt)
            self.ctx.out.flush()
        raw = self.ctx.stdin.readline().decode() if self.ctx.stdin is not None else sys.stdin.readline()
        return raw.rstrip("\n") if raw else None

    def show(self, cand: dict[str, Any], at: int, total: int) -> None:
        """The candidate as a card: heading, body once (wrapped), what else is worth saying, its proposal."""
        meta = [str(cand.get("kind", "")), speaker_words(cand), project_of(cand)]
        if "score" in cand:
            meta.append(f"score {score_text(float(cand['score']))}")
        if "seen" in cand:
            meta.append(f"seen {cand['seen']}×")
        proposal = cand.get("proposal")
        if isinstance(proposal, dict):
            meta.append(_DOES.get(str(proposal.get("action")), "a new note"))
        self.say("")
        for line in wrap(f"[{at}/{total}] #{cand['id']} {cand.get('topic', '')} {_root_words(self.ctx, cand)}",
                         self.width):
            self.say(self.style(line, "1"))
        for line in wrap(" · ".join(meta), self.width, "  "):
            self.say(self.style(line, "2"))
        for flag in flag_lines(cand):
            for line in wrap(escape_hidden(flag), self.width, "  "):
                self.say(self.style(line, "31"))
        summary = summary_besides(cand)
        if summary:
            for line in wrap(escape_hidden(summary), self.width, "  "):
                self.say(self.style(line, "3"))
        for line in wrap(escape_hidden(str(cand.get("body", ""))), self.width, "  "):
            self.say(line)
        where = _where(cand)
        quote = quote_besides(cand)
        for line in wrap(escape_hidden(f"{where} — “{quote}”" if quote else where), self.width, "  > "):
            self.say(self.style(line, "2"))
        changes = proposal_lines(cand)
        for line in changes:  # an agent's proposal: who, why, and what accepting changes
            self.say(self.style(f"  {line}", "31" if line.startswith("-") and not line.startswith("---") else
                                "32" if line.startswith("+") and not line.startswith("+++") else "36"))
        if isinstance(proposal, dict) and not changes and proposal.get("action") in {"replace", "delete"}:
            self.say(self.style(f"  proposal: {proposal.get('action', '')} {proposal.get('topic', '')}", "36"))


_DOES = {"append": "append to it", "replace": "replace its text", "delete": "delete the note"}
"""What accepting a candidate's proposal does, on its card (any other: a new note)."""


def _where(cand: dict[str, Any]) -> str:
    """Where the candidate was said: who, agent, when (first place), and how many places there are."""
    places = [e for e in cand.get("evidence") or [] if isinstance(e, dict)]
    if not places:
        source = cand.get("source") or {}
        return " · ".join(str(v) for v in (source.get("kind"), source.get("sessionId"), cand.get("createdAt")) if v)
    first = places[0]
    said = " · ".join(str(v) for v in (first.get("who"), first.get("agent") or "?", first.get("at")) if v)
    return said + (f" (and {len(places) - 1} more place{'s' if len(places) > 2 else ''})" if len(places) > 1 else "")


def _decide(ctx: Ctx, screen: _Screen, client: Any, cand: dict[str, Any], key: str) -> str | None:
    """Run one decision key; returns ``"accepted"`` / ``"rejected"`` when the candidate was decided."""
    cid = cand["id"]
    try:
        if key == "r":
            reason = screen.line("reason (Enter for none): ")
            client.queue_reject(cid, reason=(reason or "").strip() or None)
            screen.say(screen.style(f"rejected #{cid}", "33"))
            return "rejected"
        params: dict[str, Any] = {}
        if key == "e" and _deletes(cand):
            screen.say(f"#{cid} proposes to delete the note {cand.get('topic', '')}: it has no text to edit; [a]ccept "
                       "deletes the note, [r]eject keeps it")
            return None
        if key == "e":
            edited = _run_editor(ctx, edit_text(cand, _summary_kept(client, cand)))
            fields = parse_edited(edited) if edited is not None else {"body": ""}
            if not fields["body"].strip():
                screen.say("nothing accepted (the editor failed or the body is empty)")
                return None
            params = {"topic": fields["topic"] or None, "summary": fields["summary"] or None,
                      "tags": fields["tags"] or None, "content": fields["body"]}
        elif key == "i":
            into = _which_note(screen, client, cand)
            appended = _into(client, cand, into) if into else None
            if appended is None:
                screen.say(f"no note {into!r}: nothing accepted")
                return None
            params = appended
        if "into" in params:
            result = client.call(QUEUE_ACCEPT.name, {"id": cid, **params})
        else:
            result = client.queue_accept(cid, **params)
    except RpcError as error:
        screen.say(screen.style(f"#{cid}: {error.message}", "31"))
        return None
    write = result.get("write") or {}
    if not result.get("ok"):
        usage = write.get("usage") or {}
        screen.say(screen.style(f"#{cid} not accepted: {write.get('message', 'refused')} ({usage.get('bodyChars')}/"
                                f"{usage.get('writeBudget')} chars); still pending — [e]dit to shorten it", "31"))
        return None
    how = f"appended #{cid} to" if key == "i" else f"accepted #{cid}: deleted" if "removed" in write else \
        f"accepted #{cid} as"
    screen.say(screen.style(f"{how} {write.get('topic')}", "32"))
    return "accepted"


def _deletes(cand: dict[str, Any]) -> bool:
    """Whether the candidate is an agent's proposal to delete its note (accepted as it is, or rejected)."""
    return cand.get("rule") == "agent.propose" and (cand.get("proposal") or {}).get("action") == "delete"


def _summary_kept(client: Any, cand: dict[str, Any]) -> str | None:
    """The summary the editor shows for an agent's ``replace`` that gave none: the note's own, which accepting keeps
    unless the line is changed (None: the candidate's own, for any other candidate)."""
    from mmd.candidates.proposals import summary_to_write
    from mmd.wire.methods import MEMORY_READ

    proposal = cand.get("proposal") or {}
    if cand.get("rule") != "agent.propose" or proposal.get("action") != "replace" or \
            summary_to_write(str(cand.get("summary", "")), str(cand.get("body", ""))) is not None:
        return None
    note = client.call(MEMORY_READ.name, {"topic": cand.get("topic"), "project": cand.get("scope") or "user"})
    return str(note.get("summary") or "") if isinstance(note, dict) else None


_NAMED = 12
"""Most topics the ``i`` prompt names (the rest are counted)."""


def _which_note(screen: _Screen, client: Any, cand: dict[str, Any]) -> str:
    """Ask which note to append to, naming the topics there are; Enter takes the candidate's append proposal."""
    scope = str(cand.get("scope") or "user")  # the notes of the root the candidate goes to
    notes = (client.list(project=scope) or {}).get("notes", [])
    topics = [str(n.get("topic")) for n in notes if n.get("scope", scope) == scope]
    proposal = cand.get("proposal") or {}
    proposed = str(proposal.get("topic") or "") if proposal.get("action") == "append" else ""
    named = ", ".join(topics[:_NAMED]) + (f", … ({len(topics) - _NAMED} more)" if len(topics) > _NAMED else "")
    screen.say(f"notes: {named}" if topics else "there is no note yet to append to")
    answer = screen.line(f"accept into which topic?{f' (Enter: {proposed})' if proposed else ''} ") or ""
    return answer.strip() or proposed


def _into(client: Any, cand: dict[str, Any], into: str) -> dict[str, Any] | None:
    """Params of ``queue.accept`` appending the candidate to the note ``into`` (None: no such note).

    Where the daemon's ``queue.accept`` takes ``into`` it appends; else the note's body with the
    candidate's appended replaces it, keeping its summary and tags.
    """
    from mmd.wire.methods import METHODS

    if "into" in METHODS[QUEUE_ACCEPT.name].params:
        return {"into": into}
    note = client.read(into)
    if not isinstance(note, dict) or not note.get("topic"):
        return None
    return {"topic": into, "replace": True, "summary": note.get("summary") or None,
            "content": f"{str(note.get('body', '')).rstrip()}\n\n{cand.get('body', '')}"}


def _arrived(client: Any, ctx: Ctx, todo: list[dict[str, Any]], seen: set[int], screen: _Screen) -> bool:
    """At the end of the list: append the pending candidates that came in meanwhile; True when some did."""
    fresh = [c for c in _pending(client, ctx) if c["id"] not in seen]
    if fresh:
        screen.say(f"{len(fresh)} new candidate(s) came in meanwhile")
        seen.update(c["id"] for c in fresh)
        todo.extend(fresh)
    return bool(fresh)


def cmd_review(ctx: Ctx) -> int:
    """``review [--project P] [--agent A] [--min-score S]``: the keyboard loop (see the module docstring)."""
    client = ctx.need_daemon("review").client
    todo = _pending(client, ctx)
    screen = _Screen(ctx)
    decided: list[tuple[dict[str, Any], str]] = []
    counts = {"accepted": 0, "rejected": 0, "skipped": 0, "undone": 0}
    at = 0
    if not todo:
        screen.say("nothing to review")
        return EXIT_OK
    seen = {c["id"] for c in todo}
    while at < len(todo) or _arrived(client, ctx, todo, seen, screen):
        cand = todo[at]
        screen.show(cand, len(decided) + at + 1, len(decided) + len(todo))  # progress over the whole session
        key = screen.key()
        if key == "q":
            break
        if key in ("j", "s"):
            counts["skipped"] += 1
            at += 1
        elif key == "k":
            if at == 0:
                screen.say("this is the first one")
            else:
                at -= 1
                counts["skipped"] = max(0, counts["skipped"] - 1)  # back to one skipped: it is not skipped
        elif key == "u":
            if not decided:
                screen.say("nothing to undo")
                continue
            last, how = decided.pop()
            try:
                undone = client.queue_undo(last["id"])
            except RpcError as error:
                screen.say(screen.style(f"cannot undo #{last['id']}: {error.message}", "31"))
                decided.append((last, how))
                continue
            counts[how] -= 1
            counts["undone"] += 1
            what = {"deleted": "; its note deleted", "restored": "; its note's previous text restored"}
            screen.say(f"undone: #{last['id']} is pending again{what.get(undone.get('reverted'), '')}")
            todo.insert(at, undone.get("candidate") or last)
        elif key in ("a", "e", "i", "r"):
            outcome = _decide(ctx, screen, client, cand, key)
            if outcome is not None:
                counts[outcome] += 1
                decided.append((cand, outcome))
                del todo[at]
        else:
            screen.say(f"unknown key {key!r}")
    screen.say(", ".join(f"{v} {k}" for k, v in counts.items()))
    return EXIT_OK
