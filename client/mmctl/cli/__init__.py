"""``mmctl`` on the command line: the reference CLI's commands byte for byte, plus the daemon's.

Owns: parsing argv (:mod:`.parser`), the call's context and printing
(:mod:`.output`), the commands (:mod:`.reference`, :mod:`.queue`,
:mod:`.status`, :mod:`.guide`, :mod:`.doctor`) and the composition root
:func:`mmctl.cli.main.main` (the ``mmctl`` console script). Never does: work
the library (:mod:`mmctl.client`, :mod:`mmctl.backend`) does not offer, or
import the MCP SDK (``mmctl mcp`` imports :mod:`mmctl.mcp` lazily).
"""
