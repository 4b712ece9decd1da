"""``mmctl propose``: a proposal for a person to review, as an agent makes one (issue 28; for hooks and scripts).

``propose [TOPIC] --content TEXT|- | --file PATH [--reason R] [--action create|append|replace|delete] [--summary S]
[--agent A] [--session ID]``: ``memory.propose`` through the daemon (the review queue lives there): the answer says
``queued for review as #N`` (or that the same proposal is pending, was decided before, or that a note already holds
it) and no note changes until a person accepts it; ``--json`` prints the daemon's answer. Without a daemon nothing is
proposed (exit 1, saying how to start it). A person's own ``mmctl write`` stays a write.
"""

from __future__ import annotations

from .output import EXIT_OK, Ctx, Failure
from .parser import UsageError

__all__ = ["cmd_propose"]


def cmd_propose(ctx: Ctx) -> int:
    """``propose [TOPIC] …``: queue the proposal; print what became of it."""
    from ..errors import MmctlError
    from .reference import body_text

    topic = ctx.rest[0] if ctx.rest else None
    action = ctx.args.text("--action")
    content = body_text(ctx)
    if content is None and action != "delete":
        raise UsageError("propose needs the text: --content TEXT, --content - (stdin) or --file PATH "
                         "(only --action delete goes without)")
    daemon = ctx.need_daemon("propose")
    try:
        result = daemon.client.propose(content, topic=topic, action=action, summary=ctx.args.text("--summary"),
                                       reason=ctx.args.text("--reason"), agent=ctx.args.text("--agent"),
                                       session=ctx.args.text("--session"), project=ctx.scope().param or "user")
    except MmctlError as error:
        raise Failure(f"{error.code}: {error.message}") from None
    if ctx.json:
        ctx.print_json(result)
        return EXIT_OK
    status, cid = result["status"], result["id"]
    said = {"queued": f"queued for review as #{cid} ({result['scope']}); nothing is written until a person accepts "
                      f"it: mmctl queue show {cid}",
            "merged": f"already proposed as #{cid}, waiting for review: this proposal joined it",
            "held": "the memory already holds this" + (f" ({result['topic']})" if result.get("topic") else "") +
                    ": nothing queued"}.get(status, f"a person already {status} this as #{cid}: nothing queued")
    ctx.write(said + "\n")
    return EXIT_OK
