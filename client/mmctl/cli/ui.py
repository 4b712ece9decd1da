"""``mmctl ui [--print]``: the daemon's review page, opened in the browser (needs ``mmd --http``).

The URL carries this daemon start's token (from ``daemon.status``); ``--print``
prints it as the last line instead of opening a browser. Never: guesses a
port, or stores the token.
"""

from __future__ import annotations

from .output import EXIT_OK, Ctx, Failure

__all__ = ["cmd_ui"]


def cmd_ui(ctx: Ctx) -> int:
    """``ui [--print]``: open (or print) ``http://127.0.0.1:PORT/?token=…``.

    Raises:
        Failure: when no daemon answers, or it serves no page (started without ``--http``).
    """
    status = ctx.need_daemon("ui").status
    page = status.get("http") if isinstance(status, dict) else None
    if not isinstance(page, dict) or not page.get("url"):
        raise Failure("the daemon serves no review page; start it with `mmd --http 127.0.0.1:0` "
                      "(or `[http] listen = \"127.0.0.1:0\"` in its config file)")
    url = str(page["url"])
    if not ctx.args.flag("--print"):
        import webbrowser

        opened = webbrowser.open(url)
        ctx.write("opened the review page in the browser:\n" if opened else "open this in a browser:\n")
    ctx.write(url + "\n")
    return EXIT_OK
