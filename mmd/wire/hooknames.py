"""The names of the two methods a prompt's hook sends (``memory.inject`` then ``memory.injected``).

Owns: those two names, for a client that must not load :mod:`.methods`' tables (~3 ms of a hook that runs before
every prompt: ``mmctl.cli.hook``, issue 31); :mod:`.methods` builds ``MEMORY_INJECT`` and ``MEMORY_INJECTED``
from them, so each name is still spelled once, in the wire.

Never: imports anything (a hook loads it on its floor).
"""

MEMORY_INJECT_NAME = "memory.inject"
"""RPC method: a session's injection (the baseline once, then deltas)."""
MEMORY_INJECTED_NAME = "memory.injected"
"""RPC method: a hook confirms it printed an injection (its token)."""
