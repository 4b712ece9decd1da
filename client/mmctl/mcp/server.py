"""``mmctl mcp``: the Model Context Protocol server over stdio (the official SDK's ``MCPServer``).

Tools: ``mem_read``, ``mem_write``, ``mem_search``, ``mem_budget``,
``mem_digest`` (the reference's five, same meaning; under ``[agents] writes = "propose"``, the default,
``mem_write`` and ``mem_delete`` are proposals for a person to review, :mod:`.agents`), ``mem_propose``, ``mem_delete``,
``mem_due`` (notes whose review date has come), ``mem_inject`` (the index
once, then only what changed), ``mem_reload`` (a new snapshot) and ``mem_queue_list`` (the daemon's review queue,
the candidates of the session's scope alone: its project's and the user root's; a flagged candidate is listed
without its words, issue 29). ``mem_queue_accept`` and ``mem_queue_reject`` decide a candidate only under
``[agents] writes = "direct"``, and only one of the session's scope (never accepting a flagged one); under
``"propose"`` (the default) they are not listed, and a call to either is refused naming what the person runs
(``mmctl queue accept N``, ``mmctl review``): the agent proposes, a person decides. One frozen snapshot per
connection (:mod:`.memory`); the resources (:mod:`.resources`) show the latest revision. Every tool returns both a
text block written for the model (everything it needs, bodies included) and
``structuredContent`` that validates against the tool's declared output
schema (the pydantic models of :mod:`.outputs`); both, and every error's text, pass the last guard
(:mod:`.guard`: secrets redacted, hidden text escaped), as every resource does. The agents' guide and the
protocol's reference are the server's instructions (:func:`mmd.inject.guide.instructions`). Errors (a bad topic, a
topic with no note, a parameter the tool does not declare, no daemon for the queue) come back as tool errors whose
text says what to do; a refused write is a result, ``ok: false`` with its usage, as mm v1 §6 wants.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from mmd import __version__
from mmd.core.config_file import agent_setting
from mmd.core.errors import MMError
from mmd.core.options import SEARCH_MODES
from mmd.core.paths import INDEX_NAME
from mmd.inject.guide import instructions as guide_instructions

from ..errors import MmctlError
from ..render import budget_lines
from ..scope import USER
from .agents import PROPOSE_DESCRIPTION, ProposalTools, agent_of
from .guard import guarded_result, guarded_text
from .memory import (
    DaemonMemory,
    DirectMemory,
    FollowingMemory,
    NoRootYet,
    SessionMemory,
    describe_error,
)
from .outputs import (
    BudgetOut,
    DeleteOut,
    DigestOut,
    DueOut,
    InjectOut,
    ProposeOut,
    QueueOut,
    ReadOut,
    ReloadOut,
    SearchOut,
    WriteOut,
    usage_text,
)
from .queue import DECISIONS, PERSON_DECIDES, QUEUE_DESCRIPTIONS, QueueTools, person_decides, summary_and_body
from .resources import MemoryServer, note_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..scope import Scope

__all__ = ["DESCRIPTIONS", "BudgetOut", "DeleteOut", "DigestOut", "DueOut", "InjectOut", "MemoryTools", "ProposeOut",
           "QueueOut", "ReadOut", "ReloadOut", "SearchOut", "WriteOut", "build_server", "serve"]


def _result(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _fail(error: BaseException) -> ToolError:
    return ToolError(describe_error(error))


def _positive(name: str, value: int | None) -> None:
    """Refuse a count the core would silently replace by its default (the reference's rule for the CLI's own
    callers): a model that sent ``budget: -1`` should hear so, not get 4000."""
    if value is not None and value < 1:
        raise ToolError(f"E_INVALID: {name} must be a positive integer, got {value}")


_note_text = note_text


def _index_text(index: dict[str, Any]) -> str:
    over = " — OVER BUDGET: consolidate it (merge or delete entries)" if index["overBudget"] else ""
    lines = [f"Memory index ({len(index['entries'])} entries, {index['lineCount']}/{index['lineCap']} lines, "
             f"{index['byteCount']}/{index['byteCap']} bytes{over}); snapshot {index['loadedAt']}:", ""]
    lines += [f"- {e['topic']}" + (f" — {e['summary']}" if e["summary"] else "") for e in index["entries"]]
    if not index["entries"]:
        lines.append("(no notes yet: record durable context with mem_write)")
    return "\n".join(lines) + "\n"


DESCRIPTIONS = {
    "mem_read": "Read memory from this session's frozen snapshot: no topic gives the MEMORY.md index (read it "
                "first); a topic gives that note in full; all=true gives the index and every note.",
    "mem_write": "Create or replace a note. Budgets never truncate: an over-budget write writes nothing and returns "
                 "ok=false with usage; compress and retry. tags is a comma list; budget is the character budget "
                 "of this write; reviewAfter (YYYY-MM-DD, or 10d / 2w / 3m / 1y from today) is when the note should "
                 "be re-checked, \"\" removes it (a rewrite keeps the date it had).",
    "mem_search": "Search the memory snapshot (topic, summary, tags and body; CJK supported). mode: auto | scan | "
                  "fts5; limit: most matches.",
    "mem_budget": "The deterministic budget report: index lines/bytes against their caps, each note's use of its "
                  "write budget, pending writes, anomalies.",
    "mem_digest": "Distill candidate memories from text, a file, or the newest session log. Never writes: review "
                  "the candidates and mem_write the ones worth keeping.",
    "mem_delete": "Delete a note and its index entry. Deletes are always allowed, even over budget: remove what is "
                  "stale, wrong or merged into another note.",
    "mem_due": "Notes whose review date has come (withinDays: also those due within that many days). Re-check each, "
               "then rewrite it (mem_write with a new reviewAfter, or \"\" for none) or delete it (mem_delete).",
    "mem_inject": "What you should know of the memory now: the first call gives the index (one line per topic), "
                  "later calls only what was added, updated or removed since (and your reads then see it), and "
                  "nothing when nothing changed.",
    "mem_reload": "Take a new snapshot: reads and searches then see every change made since this session began, by "
                  "you or by other agents. Writing a note another agent changed since your snapshot is refused "
                  "(E_CONFLICT) until you reload and read it (or read its mm:// resource, which shows the latest).",
    **QUEUE_DESCRIPTIONS,
    "mem_propose": PROPOSE_DESCRIPTION,
}
"""Tool name → the description the model reads (under ``[agents] writes = "direct"``; :func:`descriptions`)."""

def descriptions(writes: str) -> dict[str, str]:
    """The tools a server under ``[agents] writes`` = ``writes`` lists, each with the description the model reads:
    under ``propose`` neither of :data:`DECISIONS`, and ``mem_queue_list`` says who decides."""
    if writes == "direct":
        return dict(DESCRIPTIONS)
    listed = {name: text for name, text in DESCRIPTIONS.items() if name not in DECISIONS}
    return {**listed, "mem_queue_list": DESCRIPTIONS["mem_queue_list"] + PERSON_DECIDES}


class MemoryTools(ProposalTools, QueueTools):
    """The tools of one connection, as methods named after the tools, over ``memory``.

    ``client`` is the injection client of ``mem_inject`` (one per connection: an agent session). ``writes``:
    ``propose`` (``[agents] writes``' default) makes ``mem_write`` and ``mem_delete`` proposals
    (:class:`~.agents.ProposalTools`) and leaves every decision of the queue to a person (:class:`~.queue.QueueTools`);
    ``direct`` writes at once. ``scopes``: the roots whose candidates the session sees (its project's key, then
    ``user``; ``("user",)`` in the user scope).
    """

    def __init__(self, memory: FollowingMemory, client: str | None = None, writes: str = "propose",
                 scopes: tuple[str, ...] = ("user",)) -> None:
        self.memory = memory
        self.client = client or f"mcp:{secrets.token_hex(6)}"
        self.writes = writes
        self.scopes = scopes

    async def mem_read(self, topic: str | None = None, all: bool = False) -> Annotated[CallToolResult, ReadOut]:
        memory = self.memory
        try:
            if topic:
                note = await memory.read(topic)
                if note is None:
                    raise ToolError(f"E_NOT_FOUND: no note for topic {topic} ({memory.uri_for(topic)}) in this "
                                    "session's snapshot; mem_read without a topic lists the topics, and mem_reload "
                                    "takes a new snapshot (with the notes written since, by you or others)")
                return _result(_note_text(note), {"found": True, "topic": topic, "uri": note["uri"], "note": note})
            index = await memory.index()
            if not all:
                return _result(_index_text(index), {"found": True, "index": index})
            notes = await memory.notes()
            text = _index_text(index) + "".join("\n" + _note_text(n) for n in notes)
            return _result(text, {"found": True, "index": index, "notes": notes})
        except (MMError, MmctlError) as error:
            raise _fail(error) from None

    async def mem_write(self, topic: str, content: str, summary: str | None = None, tags: str | None = None,
                        budget: int | None = None,
                        reviewAfter: str | None = None) -> Annotated[CallToolResult, WriteOut]:
        _positive("budget (code points)", budget)
        if self.writes == "propose":  # the agent proposes, the person decides (issue 28)
            return await self.proposed_write(topic, content, summary, tags, reviewAfter)
        try:
            await self.memory.check_unchanged(topic)
            outcome = await self.memory.write(topic, content, summary, tags, budget, reviewAfter)
            if outcome["ok"]:
                await self.memory.wrote(topic)
        except (MMError, MmctlError) as error:
            raise _fail(error) from None
        usage = outcome["usage"]
        if outcome["ok"]:
            text = (f"{outcome['action']} {outcome['uri']}: {usage_text(usage)}; "
                    f"{outcome.get('pendingWrites', 1)} pending write(s), visible from the next session\n")
        else:
            text = f"NOT WRITTEN ({outcome['code']}): {outcome['message']}. Usage: {usage_text(usage)}\n"
        return _result(text, outcome)

    async def mem_search(self, query: str, mode: str | None = None,
                         limit: int | None = None) -> Annotated[CallToolResult, SearchOut]:
        if mode is not None and mode not in SEARCH_MODES:
            raise ToolError(f"E_INVALID: mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
        try:
            result = await self.memory.search(query, mode, limit)
        except (MMError, MmctlError) as error:
            raise _fail(error) from None
        lines = [f"{result['total']} match(es) via {result['engine']} — {query}"]
        if result.get("note"):
            lines.append(f"note: {result['note']}")
        lines += [f"- {m['topic']} ({m['uri']}): {m['snippet']}" for m in result["matches"]]
        if result["truncated"]:
            lines.append("(truncated to limit)")
        return _result("\n".join(lines) + "\n", result)

    async def mem_budget(self) -> Annotated[CallToolResult, BudgetOut]:
        try:
            report = await self.memory.budget()
        except (MMError, MmctlError) as error:
            raise _fail(error) from None
        return _result("\n".join(budget_lines(report)) + "\n", report)

    async def mem_digest(self, text: str | None = None, file: str | None = None, maxItems: int | None = None,
                         topicHint: str | None = None) -> Annotated[CallToolResult, DigestOut]:
        _positive("maxItems", maxItems)
        try:
            result = await self.memory.digest(text, file, maxItems, topicHint)
        except (MMError, MmctlError) as error:
            raise _fail(error) from None
        if result["sourceKind"] == "none":
            return _result(f"no digest source: {result['note']}\n", result)
        lines = [f"digest from {result['source']} — {len(result['candidates'])} candidate(s); review then mem_write:"]
        for c in result["candidates"]:
            over = " OVER BUDGET" if c.get("overBudget") else ""
            lines.append(f"- topic {c['topic']} ({c['kind']}, {c['chars']}/{c['budget']} chars{over}): "
                         f"{summary_and_body(c)}")
        return _result("\n".join(lines) + "\n", result)

    async def mem_delete(self, topic: str) -> Annotated[CallToolResult, DeleteOut]:
        if self.writes == "propose":
            return await self.proposed_delete(topic)
        try:
            await self.memory.check_unchanged(topic)
            outcome = await self.memory.delete(topic)
            await self.memory.wrote(topic)
        except (MMError, MmctlError) as error:
            raise _fail(error) from None
        uri = self.memory.uri_for(topic)
        text = f"deleted {uri}" if outcome["removed"] else f"no note for topic {topic} ({uri}): nothing to delete"
        return _result(text + "\n", outcome)

    async def mem_due(self, withinDays: int = 0) -> Annotated[CallToolResult, DueOut]:
        try:
            report = await self.memory.due(withinDays)
        except (MMError, MmctlError) as error:
            raise _fail(error) from None
        lines = [f"- {d['topic']} ({self.memory.uri_for(d['topic'])}): review date {d['reviewAfter']}, "
                 f"{d['daysLeft']} day(s) left" for d in report["due"]]
        lines += [f"- {b['topic']}: its review-after value {b['value']!r} is no date; rewrite it"
                  for b in report["invalid"]]
        head = f"{len(report['due'])} note(s) due for review (today {report['today']})"
        return _result("\n".join([head + (":" if lines else ""), *lines]) + "\n", report)

    async def mem_inject(self, maxBytes: int | None = None) -> Annotated[CallToolResult, InjectOut]:
        try:
            result = await self.memory.inject(self.client, maxBytes)
            if result["mode"] in ("baseline", "delta"):  # what the agent was just told of, its reads now see
                await self.memory.reload()
        except (MMError, MmctlError) as error:
            raise _fail(error) from None
        text = result["text"] or "nothing changed in the memory since your last mem_inject"
        return _result(text + "\n", result)

    async def mem_reload(self) -> Annotated[CallToolResult, ReloadOut]:
        try:
            result = await self.memory.reload()
        except (MMError, MmctlError) as error:
            raise _fail(error) from None
        return _result(f"new snapshot taken at {result['loadedAt']}: reads now see every change made so far\n",
                       result)

class _StrictServer(MemoryServer):
    """The memory server whose tools refuse parameters they do not declare (a mistyped ``topc`` is no ``topic``)."""

    tools: MemoryTools | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """As :meth:`MCPServer.call_tool`, after checking every argument's name against the tool's schema; the result
        (its text and structured content) and a tool error's text pass the last guard (:mod:`.guard`).

        Raises:
            ToolError: ``E_INVALID: <tool> has no parameter 'x' (did you mean 'y'?); its parameters: …``; for a
                decision of the queue unless ``[agents] writes = "direct"`` (:func:`~.queue.person_decides`: those
                tools are not even listed then); as the tool raises, its text guarded.
        """
        tools = self.tools
        if tools is not None and context is not None:
            tools.agent = agent_of(context)  # who proposes: the client that said initialize
        if tools is not None and tools.writes != "direct" and name in DECISIONS:
            raise person_decides(name, arguments)  # the agent proposes, a person decides
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            known = list(tool.parameters.get("properties", {}))
            unknown = [key for key in arguments if key not in known]
            if unknown:
                from difflib import get_close_matches

                near = get_close_matches(unknown[0], known, n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ToolError(f"E_INVALID: {name} has no parameter {', '.join(map(repr, unknown))}{hint}; its "
                                f"parameters: {', '.join(known) or 'none'}")
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as error:
            if type(error) is not ToolError:  # the SDK's UnexpectedToolError: a crash, logged as one
                raise
            raise ToolError(guarded_text(str(error))) from None
        return guarded_result(result) if isinstance(result, CallToolResult) else result


def build_server(memory: FollowingMemory, instructions: str, *, root: Path, memory_id: str,
                 writes: str = "propose", scopes: tuple[str, ...] = (USER,)) -> MCPServer[Any]:
    """The MCP server for one connection over ``memory`` (tools) and the files of ``root`` (resources);
    closing the connection releases the snapshot. ``writes``: ``[agents] writes`` (``propose`` | ``direct``): the
    tools listed are :func:`descriptions`'. ``scopes``: the roots whose candidates the session sees (the project's
    key, then ``user``)."""

    @asynccontextmanager
    async def lifespan(server: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            await memory.close()

    server = _StrictServer("mmctl", root=root, memory_id=memory_id, instructions=instructions, version=__version__,
                          lifespan=lifespan, on_note=memory.saw,
                          log_level="WARNING")  # not the SDK's INFO line for every request on the agent's stderr
    tools = server.tools = MemoryTools(memory, writes=writes, scopes=scopes)
    for name, description in descriptions(writes).items():
        server.add_tool(getattr(tools, name), name=name, description=description)
    return server


def serve(root: str | None, lang: str, env: Mapping[str, str], scope: Scope | None = None) -> int:
    """Run the server on stdin/stdout until the client disconnects; returns the exit code (0).

    Args:
        root: the ``--root`` value, or None (resolved as every command does: config file, mm v1 §2).
        lang: the guide's language, ``en`` | ``zh`` | ``auto``.
        env: the environment (``MMCTL_NOW``, ``MMCTL_FTS5`` and ``MMCTL_NO_DAEMON`` are read as the CLI does).
        scope: the connection's scope (``docs/projects.md``; the CLI gives the agent's folder's project): through
            the daemon, reads see that project's root and the user root and writes go to the project's; on the
            files, the scope's own root. None: ``root`` alone.

    The snapshot is taken here, before the first request: from the daemon when
    one owns the root, else from the files.

    Raises:
        MMError(E_INVALID): for a bad config file value.
        ValueError: for a bad ``MMCTL_NOW``.
    """
    import asyncio

    from ..backend import Daemon, Direct, daemon_listening, find_daemon
    from ..pins import pinned_clock, pinned_fts5, wants_daemon

    direct = Direct(str(scope.root) if scope is not None else root, env, pinned_clock(env), pinned_fts5(env),
                    scope=scope)
    options = direct.options()
    home = scope.home if scope is not None else options.root
    instructions = guide_instructions(lang, index_lines=options.index_lines, index_bytes=options.index_bytes)
    writes = agent_setting("agents.writes", env)
    scopes = (scope.key, USER) if scope is not None and scope.key is not None else (USER,)
    daemon = find_daemon(home, env) if wants_daemon(env) else None

    async def through(found: Daemon) -> DaemonMemory:
        from ..aclient import AsyncClient

        target = found.client.target
        found.client.close()
        return await DaemonMemory(AsyncClient(endpoint=target.rpc, pub_endpoint=target.pub, timeout_ms=10_000,
                                              project=scope.param if scope is not None else None)).open()

    async def later() -> DaemonMemory | None:  # a daemon started after this server
        found = await asyncio.to_thread(find_daemon, home, env) if wants_daemon(env) else None
        return None if found is None else await through(found)

    def on_files() -> SessionMemory:
        if (options.root / INDEX_NAME).is_file():
            return DirectMemory(direct.memory(search=True, options=options))
        # not a root yet: a read says so; the first write makes it
        return NoRootYet(options.root, options.memory_id, lambda: DirectMemory(direct.memory(search=True,
                                                                                             options=options)))

    def alive() -> bool:
        return daemon_listening(home, env)

    async def run() -> None:
        first = await through(daemon) if daemon is not None else on_files()
        memory = await FollowingMemory(first, on_files, later, alive).begin()
        await build_server(memory, instructions, root=options.root, memory_id=options.memory_id, writes=writes,
                           scopes=scopes).run_stdio_async()

    asyncio.run(run())
    return 0
