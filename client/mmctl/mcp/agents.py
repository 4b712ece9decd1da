"""What the MCP server does for the agent as a proposer (issue 28): ``mem_propose``, the boundary, the scoped injection.

- :class:`ProposalTools` (a mixin of :class:`~.server.MemoryTools`): the ``mem_propose`` tool, and under
  ``[agents] writes = "propose"`` (the default) ``mem_write`` and ``mem_delete`` made proposals: the note is
  untouched, the answer says ``queued for review as #N`` (or that the same proposal is pending, was decided
  before, or that a note already holds it). Proposals wait in the daemon's review queue; without a daemon nothing
  is written and the agent is told to put the fact on an ``mm:`` line instead (mmd reads it from the session's log
  once it runs).
- :func:`agent_of`: who the MCP client is (``clientInfo.name`` of its ``initialize``): ``claude-code``, ``codex``
  or ``other``.
- :func:`inject_scoped`: ``mem_inject`` in a project's scope gives the project's part and the user's, each
  labelled and with its own view, as the hooks do (:func:`mmd.inject.scopes.join_injections`).

Never: reads the environment or the config file (the server passes ``writes`` in).
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from mmd.core.errors import MMError

from ..errors import MmctlError
from .memory import FollowingMemory, MemoryUnavailable, describe_error
from .outputs import DeleteOut, ProposeOut, WriteOut

__all__ = ["PROPOSE_DESCRIPTION", "ProposalTools", "agent_of", "inject_scoped", "proposal_line"]

PROPOSE_DESCRIPTION = (
    "Propose a memory for a person to review (nothing is written until they accept it): a person's standing rule or "
    "correction, a decision and its reason, a root cause, how to build/test/deploy; never secrets or the current "
    "task's state. content: the text; reason: why it is worth keeping (one line). topic: the note it belongs to "
    "(absent: one is proposed); action: append (the default when the note exists) adds content to it, replace gives "
    "its whole new text (the review shows the difference), delete removes it, create makes a new note.")
"""The ``mem_propose`` tool's description."""


def agent_of(context: Any) -> str:
    """``claude-code``, ``codex`` or ``other``: the agent behind an MCP request's session (its ``clientInfo.name``)."""
    try:
        name = str(context.session.client_params.client_info.name).lower()
    except (AttributeError, ValueError, TypeError):  # no request context (a direct call), or no client info
        return "other"
    return "claude-code" if "claude" in name else "codex" if "codex" in name else "other"


def proposal_line(result: dict[str, Any], uri: str) -> str:
    """The answer an agent reads for ``memory.propose``'s ``result`` about the note ``uri``."""
    status, cid = result.get("status"), result.get("id")
    if status == "queued":
        return (f"queued for review as #{cid}: a person accepts or rejects it (mmctl review); {uri} is unchanged "
                "until then")
    if status == "merged":
        return f"already proposed as #{cid}, waiting for review: your proposal joined it; {uri} is unchanged"
    if status in ("accepted", "rejected"):
        return f"a person already {status} this as #{cid}: nothing queued"
    held = result.get("topic")
    return f"the memory already holds this{f' ({held})' if held else ''}: nothing queued"


def _result(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


class ProposalTools:
    """``mem_propose`` and the proposal form of ``mem_write`` / ``mem_delete``, over :attr:`memory`.

    Attributes:
        writes: ``propose`` (an agent's write or delete is a proposal) or ``direct`` (``[agents] writes``).
        agent: who proposes (:func:`agent_of`; set by the server from the client's ``initialize``).
    """

    memory: FollowingMemory
    writes: str = "propose"
    agent: str = "other"

    async def _propose(self, **params: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await self.memory.propose(agent=self.agent, **params)
        except (MMError, MmctlError, MemoryUnavailable) as error:
            raise ToolError(describe_error(error)) from None
        return result

    async def mem_propose(self, content: str, reason: str, topic: str | None = None, action: str | None = None,
                          summary: str | None = None) -> Annotated[CallToolResult, ProposeOut]:
        result = await self._propose(content=content, reason=reason, topic=topic, action=action, summary=summary)
        uri = self.memory.uri_for(str(result.get("topic") or topic or ""))
        out = {k: result.get(k) for k in ("ok", "status", "id", "topic", "scope")}
        return _result(proposal_line(result, uri) + "\n", out)

    async def proposed_write(self, topic: str, content: str, summary: str | None, tags: str | None,
                             review_after: str | None) -> Annotated[CallToolResult, WriteOut]:
        """``mem_write`` as a proposal: a replace of the note's text when it exists, else a new note."""
        exists = await self.memory.live_updated(topic) is not None
        result = await self._propose(content=content, topic=topic, summary=summary,
                                     action="replace" if exists else "create",
                                     reason="written with mem_write (a replace of the note's text)" if exists else
                                     "written with mem_write")
        uri = self.memory.uri_for(topic)
        dropped = [name for name, value in (("tags", tags), ("reviewAfter", review_after)) if value]
        extra = f" ({' and '.join(dropped)} are not part of a proposal: the reviewer sets them)" if dropped else ""
        return _result(f"NOT WRITTEN: {proposal_line(result, uri)}{extra}\n",
                       {"ok": True, "topic": topic, "uri": uri, "action": "proposed",
                        "proposal": {k: result.get(k) for k in ("status", "id", "scope")}})

    async def proposed_delete(self, topic: str) -> Annotated[CallToolResult, DeleteOut]:
        """``mem_delete`` as a proposal to delete the note (nothing to delete: said so, nothing queued)."""
        uri = self.memory.uri_for(topic)
        if await self.memory.live_updated(topic) is None:
            return _result(f"no note for topic {topic} ({uri}): nothing to delete\n",
                           {"ok": True, "removed": False, "topic": topic})
        result = await self._propose(topic=topic, action="delete", reason="deleted with mem_delete")
        return _result(f"NOT DELETED: {proposal_line(result, uri)}\n",
                       {"ok": True, "removed": False, "topic": topic,
                        "proposal": {k: result.get(k) for k in ("status", "id", "scope")}})


async def inject_scoped(client: Any, key: str, max_bytes: int | None) -> dict[str, Any]:
    """``memory.inject`` for ``key`` through the async ``client``, committed: in a project's scope (the client's
    ``project``) the project's part then the user's, each in its root with its own view, the budget split as the
    hooks split it (:func:`mmd.inject.scopes.budget_split`) and the parts joined under labelled headings; else the
    user root's alone.

    Raises:
        MmctlError: as the daemon answers.
    """
    from mmd.inject.baseline import DEFAULT_MAX_BYTES
    from mmd.inject.scopes import budget_split, join_injections

    project = getattr(client, "project", None)
    if project is None or project == "user":
        result: dict[str, Any] = await client.inject(key, max_bytes=max_bytes, commit=True)
        return result
    own, mine = budget_split(DEFAULT_MAX_BYTES if max_bytes is None else max_bytes, 2)
    first = await client.inject(key, max_bytes=own, commit=True, project=project)
    second = await client.inject(key, max_bytes=mine, commit=True, project="user")
    where = project if project.startswith("/") else None
    joined = join_injections([(str(first.get("scope") or project), first), ("user", second)], where)
    keep = ("mode", "text", "added", "updated", "removed", "unchanged", "reminded", "bytes")
    return {**{k: joined[k] for k in keep}, "token": first.get("token"), "revision": first.get("revision"),
            "committed": True, "scope": first.get("scope")}
