"""The memory as MCP resources, from the latest revision on disk (issue 14).

- ``mm://<memoryId>/``: the index (MEMORY.md as it is now, ``text/markdown``);
- ``mm://<memoryId>/{topic}``: a resource template, one note (its summary,
  tags, update time and body, ``text/markdown``); ``resources/list`` lists the
  index and every note.

Resources are read from the files each time (MEMORY.md and the one note; the
MCP server runs beside the root), so they show the newest revision whether or
not a daemon owns the root, while the tools keep the connection's frozen
snapshot. Once the client has said ``notifications/initialized``, the server
stats MEMORY.md every :data:`POLL_S` seconds (every write and delete rewrites
it, through the daemon or not) and sends ``notifications/resources/list_changed``
when it changed; the server advertises ``resources.listChanged``. Every text a resource or the listing gives (a
note, the index, a note's title and description) passes the last guard (:mod:`.guard`), as the tools' results do: a
person's ``--allow-secret`` note is listed and read redacted.

Owns: the URIs, the resource texts, the change watch. Never: writes, or holds a snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.stdio import stdio_server
from mcp.types import NotificationParams
from mcp.types import Resource as MCPResource

from mmd.core.errors import MMError
from mmd.core.paths import INDEX_NAME

from .guard import guarded_text

__all__ = ["POLL_S", "MemoryServer", "note_text"]

POLL_S = 1.0
"""How often MEMORY.md is checked for a new revision, seconds."""
MARKDOWN = "text/markdown"


def note_text(note: dict[str, Any]) -> str:
    """A note as the model reads it: heading with its URI, summary, tags, update time, then the body (or, when
    the index names a file that is gone, that it is)."""
    body = (f"(its file {note['file']} is missing: the index entry is all there is; rewrite the note or delete it)"
            if note.get("missingFile") else note["body"])
    return (f"# {note['topic']} ({note['uri']})\n\nsummary: {note['summary'] or '-'}\n"
            f"tags: {', '.join(note['tags']) or '-'}\nupdated: {note['updated']}\n\n{body}\n")


def _marker(root: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(root / INDEX_NAME)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class MemoryServer(MCPServer[Any]):
    """An :class:`MCPServer` serving the memory root ``root`` as resources besides its tools.

    Args:
        root: the memory root.
        memory_id: the memory id of the URIs.
        on_note: called with ``(topic, updated)`` for each note resource read: the connection has seen that
            version (its tools then write over it without a conflict).
        name, **kwargs: as :class:`MCPServer`.
    """

    def __init__(self, name: str, *, root: Path, memory_id: str,
                 on_note: Callable[[str, str | None], None] | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.root, self.memory_id, self.on_note = root, memory_id, on_note
        self.index_uri = f"mm://{memory_id}/"
        self._watch: asyncio.Task[None] | None = None
        self.resource(self.index_uri, name="index", title="Memory index (MEMORY.md)", mime_type=MARKDOWN,
                      description="Every topic with its summary and tags, as MEMORY.md has it now.")(self._index)
        self.resource(self.index_uri + "{topic}", name="note", title="Memory note", mime_type=MARKDOWN,
                      description="One note: summary, tags, update time and body.")(self._note)
        self._lowlevel_server.add_notification_handler("notifications/initialized", NotificationParams,
                                                       self._initialized)

    # --- reads ----------------------------------------------------------------------------------------

    def _entries(self) -> tuple[Any, ...]:
        from mmd.core.snapshot import parse_live_index

        try:
            return parse_live_index(self.root, self.memory_id)[1]
        except MMError as error:
            raise ResourceNotFoundError(f"{error.code.value}: {error.message}") from None

    async def _index(self) -> str:
        try:
            return guarded_text(await asyncio.to_thread((self.root / INDEX_NAME).read_text, encoding="utf-8"))
        except OSError as error:
            raise ResourceNotFoundError(f"cannot read {self.root / INDEX_NAME}: {error.strerror}") from None

    async def _note(self, topic: str) -> str:
        from mmd.core.model import Note
        from mmd.core.snapshot import read_note_checked
        from mmd.core.uri import uri_for

        entry = next((e for e in await asyncio.to_thread(self._entries) if e.topic == topic), None)
        if entry is None:
            raise ResourceNotFoundError(f"no note for topic {topic!r} in {self.index_uri} (list the resources "
                                        "or read the index)")
        body, _ = await asyncio.to_thread(read_note_checked, self.root, entry)
        if self.on_note is not None:
            self.on_note(topic, entry.updated)
        return guarded_text(note_text(Note(entry, uri_for(self.memory_id, topic), body or "", body is None).to_json()))

    async def list_resources(self) -> list[MCPResource]:
        """The index, then one resource per note (as the index lists them now)."""
        from mmd.core.uri import uri_for

        listed = await super().list_resources()
        try:
            entries = await asyncio.to_thread(self._entries)
        except ResourceNotFoundError:
            return listed
        seen: set[str] = set()
        for entry in entries:
            if entry.topic in seen:
                continue
            seen.add(entry.topic)
            summary = guarded_text(entry.summary)
            listed.append(MCPResource(uri=uri_for(self.memory_id, entry.topic), name=entry.topic,
                                      title=summary or entry.topic, mime_type=MARKDOWN, description=summary or None))
        return listed

    # --- list_changed ---------------------------------------------------------------------------------

    async def _initialized(self, ctx: Any, params: Any) -> None:
        if self._watch is None:
            self._watch = asyncio.get_running_loop().create_task(self._watch_revisions(ctx.session))

    async def _watch_revisions(self, session: Any) -> None:
        last = await asyncio.to_thread(_marker, self.root)
        while True:
            await asyncio.sleep(POLL_S)
            now = await asyncio.to_thread(_marker, self.root)
            if now != last:
                last = now
                await session.send_resource_list_changed()

    async def run_stdio_async(self) -> None:
        """Serve on stdin/stdout, advertising ``resources.listChanged``; stop the watch at the end."""
        low = self._lowlevel_server
        try:
            async with stdio_server() as (read_stream, write_stream):
                await low.run(read_stream, write_stream,
                              low.create_initialization_options(NotificationOptions(resources_changed=True)))
        finally:
            if self._watch is not None:
                self._watch.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._watch
