"""The review queue's MCP tools, kept to the session's scope: the agent proposes, a person decides (issues 27-29).

- ``mem_queue_list`` lists the candidates proposed to the session's project root, then those proposed to the user
  root (in the user scope, the user root's alone): never another project's, as a session in a project is told that
  project's notes and the user's, never another's (docs/projects.md). Each says the root it is proposed to; a
  flagged one is shown without its words (:func:`for_agent`).
- ``mem_queue_accept`` and ``mem_queue_reject`` decide only under ``[agents] writes = "direct"``, and only a
  candidate of the session's scope; an acceptance never takes a flagged one. Under ``"propose"`` (the default) the
  server does not list them, and a call to either is refused naming what the person runs (:func:`person_decides`):
  an agent that could accept its own proposals, or reject a person's rules for good, would decide alone.

Never: reads the environment or the config file (the server passes ``writes`` and the scopes in).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from mmd.core.errors import MMError
from mmd.wire.methods import ID_DIGITS

from ..errors import MmctlError
from ..render import candidates
from ..scope import USER
from .memory import FollowingMemory, MemoryUnavailable, describe_error
from .outputs import QueueOut, usage_text

__all__ = ["DECISIONS", "PERSON_DECIDES", "QUEUE_DESCRIPTIONS", "QueueTools", "for_agent", "person_decides",
           "summary_and_body"]

DECISIONS = ("mem_queue_accept", "mem_queue_reject")
"""The tools that decide a candidate: a person's alone under ``[agents] writes = "propose"``."""
QUEUE_DESCRIPTIONS = {
    "mem_queue_list": "List the review queue of this session's scope (its project's root, then the user root): "
                      "candidate memories the daemon distilled from session logs and agents' proposals, best first "
                      "(score; seen = how many places said it; root = where accepting it writes). status: pending "
                      "(default) | accepted | rejected | expired; all: also the candidates hidden by their "
                      "session's budget.",
    "mem_queue_accept": "Accept a review-queue candidate of this session's scope (its project's root or the user "
                        "root; never a flagged one): it is written through mem_write (budgets hold); topic, "
                        "content, summary and tags override the candidate's; into appends it to that existing note "
                        "instead. A topic that already has a note is refused unless into names it (append) or "
                        "replace is true (overwrite: the note's text is lost).",
    "mem_queue_reject": "Reject a review-queue candidate of this session's scope for good, with an optional reason.",
}
"""The queue tools' descriptions under ``[agents] writes = "direct"``."""
PERSON_DECIDES = (" A person accepts or rejects them (mmctl queue accept N, mmctl queue reject N, or mmctl review): "
                  "this server decides none ([agents] writes = \"propose\"); to have one kept, tell the person its "
                  "id.")
"""What ``mem_queue_list``'s description adds under ``[agents] writes = "propose"``."""
LIST_LIMIT = 100
"""The candidates ``mem_queue_list`` gives without a ``limit`` (``queue.list``'s default page)."""


def person_decides(name: str, arguments: Mapping[str, Any]) -> ToolError:
    """The refusal of a call to ``name`` (one of :data:`DECISIONS`) under ``[agents] writes = "propose"``: says that
    nothing was decided and what the person runs (``mmctl queue accept|reject N``, ``mmctl review``)."""
    raw = arguments.get("id")
    n = raw if isinstance(raw, int) or (isinstance(raw, str) and raw.isascii() and raw.isdigit()) else "N"
    verb = "accept" if name == "mem_queue_accept" else "reject"
    return ToolError(f"E_INVALID: {name} decides nothing here: under [agents] writes = \"propose\" the agent "
                     f"proposes and a person decides. Nothing was {verb}ed: ask the person to run mmctl queue {verb} "
                     f"{n} (mmctl queue show {n} shows it), or mmctl review")


def _candidate_id(raw: str | int) -> str | int:
    """A candidate id as ``mem_queue_list`` shows it (an integer) or as text; digits become the integer."""
    digits = isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) <= ID_DIGITS
    return int(raw) if digits else raw


def for_agent(candidate: dict[str, Any]) -> dict[str, Any]:
    """A candidate as an agent may see it (issue 29): a flagged one without its words (summary, body, quotes, diff:
    an instruction flagged is never repeated to an agent), saying who decides it."""
    if not candidate.get("flags"):
        return candidate
    kinds = ", ".join(dict.fromkeys(str(f.get("kind")) for f in candidate["flags"]))
    words = f"(flagged: {kinds}; its text waits for a person: mmctl queue show {candidate.get('id')})"
    shown = {k: v for k, v in candidate.items() if k not in ("diff", "evidence", "source")}
    return {**shown, "summary": words, "body": words, "flags": [{"kind": f.get("kind")} for f in candidate["flags"]]}


def summary_and_body(candidate: dict[str, Any]) -> str:
    """A candidate's summary, then its body on the next line; the text once when they are the same."""
    summary, body = str(candidate.get("summary", "")), str(candidate.get("body", ""))
    return summary if summary.strip() == body.strip() else f"{summary}\n  {body}"


def _result(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


class QueueTools:
    """``mem_queue_list``, ``mem_queue_accept`` and ``mem_queue_reject`` over :attr:`memory`'s review queue.

    Attributes:
        writes: ``propose`` (the decisions are refused) or ``direct`` (``[agents] writes``).
        scopes: the roots whose candidates this session sees and, under ``direct``, decides: the project's key
            then ``user`` in a project's scope, ``("user",)`` in the user scope.
    """

    memory: FollowingMemory
    writes: str = "propose"
    scopes: tuple[str, ...] = (USER,)

    async def _queue(self, action: str, **params: Any) -> Any:
        try:
            return await self.memory.queue(action, **params)
        except (MMError, MmctlError, MemoryUnavailable) as error:
            raise ToolError(describe_error(error)) from None

    def _roots(self) -> str:
        return " and ".join(f"the project root {s}" if s != USER else "the user root" for s in self.scopes)

    async def _decidable(self, name: str, id: str | int) -> dict[str, Any]:
        """The candidate ``id`` when this session may decide it with ``name``.

        Raises:
            ToolError: under ``propose`` (:func:`person_decides`); for a candidate of another root than the
                session's (its text is not shown); as the daemon answers ``queue.get`` (``E_NOT_FOUND``, …).
        """
        if self.writes != "direct":
            raise person_decides(name, {"id": id})
        candidate: dict[str, Any] = await self._queue("get", candidate_id=_candidate_id(id))
        if str(candidate.get("scope") or USER) not in self.scopes:
            raise ToolError(f"E_INVALID: candidate {id} is proposed to another project's root, not to this "
                            f"session's ({self._roots()}): a session never decides another project's candidates; "
                            f"a person does (mmctl queue show {id})")
        return candidate

    async def mem_queue_list(self, status: str | None = None, limit: int | None = None,
                             all: bool = False) -> Annotated[CallToolResult, QueueOut]:
        found: list[dict[str, Any]] = []
        for scope in self.scopes:  # the project's first, as `mmctl queue list` lists the folder's project first
            found += candidates(await self._queue("list", status=status, limit=limit, all=all, project=scope))
        items = [for_agent(c) for c in found[:LIST_LIMIT if limit is None else limit]]
        lines = [f"{len(items)} {status or 'pending'} candidate(s) of {self._roots()}:"] + [
            f"- id {c.get('id')} [{c.get('status', '')}] root {c.get('scope') or USER} topic {c.get('topic')} "
            f"({c.get('kind')}, said by {c.get('speaker', '?')}, {c.get('chars')} chars, score {c.get('score', 0)}, "
            f"seen {c.get('seen', 1)}): {summary_and_body(c)}" for c in items]
        return _result("\n".join(lines) + "\n", {"ok": True, "candidates": items})

    async def mem_queue_accept(self, id: str | int, topic: str | None = None, content: str | None = None,
                               summary: str | None = None, tags: str | None = None, replace: bool = False,
                               into: str | None = None) -> Annotated[CallToolResult, QueueOut]:
        flagged = (await self._decidable("mem_queue_accept", id)).get("flags")
        if flagged:  # a flagged candidate waits for a person (issue 29): an agent never accepts it
            kinds = ", ".join(dict.fromkeys(str(f.get("kind")) for f in flagged))
            raise ToolError(f"E_INVALID: candidate {id} is flagged ({kinds}): a person decides it (mmctl queue show "
                            f"{id}, then mmctl queue accept {id}, or the review page); an agent cannot accept it")
        result = await self._queue("accept", candidate_id=_candidate_id(id), topic=topic, content=content,
                                   summary=summary, tags=tags, replace=replace, into=into)
        write = result.get("write") or {}
        if result.get("ok"):
            text = f"accepted {id}: {write.get('action')} {write.get('uri')}"
        else:
            text = (f"NOT ACCEPTED ({write.get('code')}): {write.get('message')}. Usage: "
                    f"{usage_text(write.get('usage', {}))}; the candidate stays pending: retry with a shorter content")
        return _result(text + "\n", {"ok": bool(result.get("ok")), "result": result})

    async def mem_queue_reject(self, id: str | int, reason: str | None = None) -> Annotated[CallToolResult, QueueOut]:
        await self._decidable("mem_queue_reject", id)
        result = await self._queue("reject", candidate_id=_candidate_id(id), reason=reason)
        return _result(f"rejected {id}\n", {"ok": True, "result": result})
