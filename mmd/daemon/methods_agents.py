"""The agents' RPC handlers (a mixin of :class:`~.methods.Methods`): ``memory.propose`` (issue 28).

The use-cases are in :mod:`.agents`; this handler checks nothing the wire did not. Never touches a socket.
"""

from __future__ import annotations

from typing import Any

from mmd.wire import methods as wire

from .agents import Agents
from .handling import handles

__all__ = ["AgentMethods"]


class AgentMethods:
    """``memory.propose``, over :attr:`agents`."""

    agents: Agents

    @handles(wire.MEMORY_PROPOSE)
    async def propose(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.propose {content?, topic?, action?, summary?, reason?, agent?, session?, sessionId?, project?}`` →
        ``{ok, status, id, candidate?, topic, scope}``: the agent's proposal in the review queue.

        Raises:
            DaemonError(E_UNAVAILABLE | E_EXISTS | E_NOT_FOUND | E_INVALID), MMError(E_INVALID): as
            :meth:`.agents.Agents.propose`.
        """
        return await self.agents.propose(p)
