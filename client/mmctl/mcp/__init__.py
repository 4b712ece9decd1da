"""``mmctl mcp``: the Model Context Protocol server over stdio (:mod:`.server`) and its memory (:mod:`.memory`).

Owns: the MCP tools and one frozen snapshot per connection. The one part of
``mmctl`` that imports the MCP SDK (and through it pydantic, starlette,
uvicorn); nothing else in ``mmctl`` imports this package at module level.
Never does: parse a command line (it takes ``(root, lang, env)``).
"""
