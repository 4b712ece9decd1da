"""``mmctl nudge`` and ``mmctl guide``: what the memory asks of its agents (with or without a daemon).

- ``nudge``: aligned rows and the suggested actions, then a ``warning:`` line when the index is
  near its caps (:data:`.advice.NEAR_CAPS` of its lines or bytes); ``--json`` the reference's
  ``{at, pendingWrites, noteCount, indexOverBudget, needsCommit, suggestedActions}``;
- ``guide``: the agents' guide and the protocol's reference (also the MCP server's instructions).
"""

from __future__ import annotations

from .output import EXIT_OK, Ctx, aligned
from .parser import UsageError

__all__ = ["cmd_guide", "cmd_nudge"]


def cmd_nudge(ctx: Ctx) -> int:
    """``nudge``: the nudge report, from the daemon when one runs."""
    ctx.need_root()
    daemon = ctx.daemon()
    report = daemon.client.nudge() if daemon is not None else ctx.direct().memory().nudge()
    if ctx.json:
        ctx.print_json(report)
        return EXIT_OK
    rows = [("at", report["at"]), ("notes", report["noteCount"]), ("pending writes", report["pendingWrites"]),
            ("index over budget", report["indexOverBudget"]), ("needs commit", report["needsCommit"])]
    ctx.write(aligned(rows) + "".join(f"- {a}\n" for a in report["suggestedActions"]))
    from .advice import near_caps

    index = daemon.client.index() if daemon is not None else ctx.direct().memory().read_index()
    warning = near_caps(index["lineCount"], index["lineCap"], index["byteCount"], index["byteCap"])
    if warning:
        ctx.write(f"warning: {warning}\n")
    return EXIT_OK


def cmd_guide(ctx: Ctx) -> int:
    """``guide [--lang en|zh]``: the agents' guide and the protocol's reference (the MCP server's instructions)."""
    from mmd.inject.guide import instructions

    lang = ctx.args.text("--lang") or "en"
    if lang not in ("en", "zh", "auto"):
        raise UsageError(f'--lang expects en or zh (got "{lang}")')
    options = ctx.direct().options()
    ctx.write(instructions(lang, index_lines=options.index_lines, index_bytes=options.index_bytes))
    return EXIT_OK
