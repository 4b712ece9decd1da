"""Deviations told by their kind: an error that names its file, a root the reference refuses for one note, a line
break in ``updated``.

Each rule recognizes a kind of difference, never the vectors that show one: an error with the reference's code
and message and a file's path added (by message shape); a note our parser refuses (a title or ``mm-topic`` that
is not a slug) for which the reference refuses the whole root, at start, reload, reopen or in a CLI process
(by refused input class, and the reference's error is exactly the one our parser gives for that note); a write
whose ``updated`` holds a line break, refused with E_INVALID where the reference writes it into MEMORY.md (by
refused input class and error code).

A difference that changes what the session holds afterwards also says what the reference did, as
``as_reference(case, session, op)``: the runner replays the vector on a model session that does that instead
of our answer, and compares every later result and the final files with the model's; so a later result is
explained only when it is what follows from the reference's own behaviour, and anything else still fails.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from mmd.core import budget, format
from mmd.core.errors import ErrorCode, MMError

from .conformance_base import Deviation, same

_PATH = r"(?:<ROOT>|<DSH_HOME>|<BASE>)(?:/[^\s:()]*)?|/[^\s:()]+"
"""A file path as the runner leaves it (a placeholder, then a relative part), or an absolute one."""
_SHAPES = [re.compile(shape.replace("PATH", f"(?P<path>{_PATH})"))
           for shape in ("PATH: \x00", "\x00 \\(PATH\\)", "\x00: PATH", "\x00 in PATH")]
"""Where a path may be added to the reference's message (``\\x00``): before it, after it in parentheses, after a
colon or after 'in'."""


def error_of(outcome: dict[str, Any]) -> dict[str, Any] | None:
    """The error object of an op's outcome (``{op, error}``) or of the session's start (``{ok: false, error}``)."""
    error = outcome.get("error")
    return error if isinstance(error, dict) else None


def path_added(mine: str, theirs: str) -> str | None:
    """The path ``mine`` adds to the reference's message ``theirs`` in one of the shapes above, or None."""
    if not theirs or theirs not in mine:
        return None
    shape = mine.replace(theirs, "\x00", 1)
    return next((m["path"] for m in (p.fullmatch(shape) for p in _SHAPES) if m), None)


def _names_the_file(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """The same outcome and error (name, code, details) but for a file's path added to the message (and given as
    ``details`` where the reference gives none)."""
    mine, theirs = error_of(got), error_of(want)
    if mine is None or theirs is None:
        return False
    if not same({k: v for k, v in got.items() if k != "error"}, {k: v for k, v in want.items() if k != "error"}, False):
        return False
    path = path_added(str(mine.get("message", "")), str(theirs.get("message", "")))
    if path is None:
        return False
    extra = {k: v for k, v in mine.items() if k not in theirs}
    return extra in ({}, {"details": path}) and all(same(mine.get(k), v, False) for k, v in theirs.items()
                                                    if k != "message")


def _texts(case: dict[str, Any]) -> list[str]:
    """Every text the case puts in a file: its setup files and the files its ``write_file`` ops write."""
    return [str(t) for t in (*case.get("setup_files", {}).values(), *case.get("setup_home_files", {}).values(),
                             *(o.get("text", "") for o in case["ops"] if o["op"] == "write_file"))]


def note_refusals(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The errors our note parser raises for the case's files (a ``# title`` or ``> mm-topic:`` that is no slug):
    the reference raises the same one while loading a root that indexes such a note, and refuses the root."""
    found = []
    for body in _texts(case):
        try:
            format.parse_note(body)
        except MMError as error:
            if error.code == ErrorCode.E_INVALID and error.to_json() not in found:
                found.append(error.to_json())
    return found


_LOADS = ("init", "reload", "reopen")
_ESCAPED = "dsh-memory: internal error: "


def _root_refused(case: dict[str, Any], op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> bool:
    """We loaded (or a CLI process ran) where the reference refused the root with the error our parser gives
    for one of the case's notes (we load that note as a malformed-note anomaly and report it)."""
    refusals = note_refusals(case)
    if not refusals:
        return False
    if op["op"] == "cli":
        theirs = want.get("result") or {}
        said = {_ESCAPED + f"{r['name']}: {r['message']}" for r in refusals}
        return theirs.get("exitCode") == 1 and str(theirs.get("stderr", "")).rstrip("\n") in said \
            and (got.get("result") or {}).get("exitCode") == 0
    if op["op"] not in _LOADS or error_of(got) is not None:
        return False
    return error_of(want) in refusals and (op["op"] != "init" or (got.get("ok") is True
                                                                   and got.get("mode") == want.get("mode")))


def _refuse_as_reference(case: dict[str, Any], session: Any, op: dict[str, Any]) -> Any:
    """The reference refusing the root: at start it made the root's folders and template as ours does, then
    kept no session; a reload or reopen keeps the session as it was; a CLI process writes nothing."""
    refusal = note_refusals(case)[0]
    if op["op"] == "cli":
        return {"exitCode": 1, "stdout": "", "stderr": _ESCAPED + f"{refusal['name']}: {refusal['message']}",
                "json": None}
    if op["op"] == "init":
        session.setup()
        session.memory = None
    raise MMError(ErrorCode(refusal["code"]), refusal["message"], refusal.get("details"))


BREAKS = "\n\r\x0b\x0c\x85\u2028\u2029"
"""The line breaks an ``updated`` value may not hold (``mmd.core.store``): each would start a line of MEMORY.md."""


def _updated_refused(case: dict[str, Any], op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> bool:
    """A write whose ``updated`` holds a line break: E_INVALID naming ``updated`` here, written by the reference."""
    error = error_of(got)
    return (op["op"] == "write" and any(ch in str(op.get("updated", "")) for ch in BREAKS) and error is not None
            and error.get("code") == "E_INVALID" and error.get("details") == "updated" and "result" in want)


def _write_as_reference(case: dict[str, Any], session: Any, op: dict[str, Any]) -> Any:
    """The reference's write of that ``updated``: ours with a one-line stand-in, then the stand-in replaced in
    MEMORY.md by the given text (the bytes the reference writes, index lines forged by it included) and the
    outcome's index usage measured on those bytes."""
    stand_in = f"mm-conformance-{uuid.uuid4().hex}"
    result = session.op_write({**op, "updated": stand_in})
    if isinstance(result, dict) and result.get("ok"):
        index = session.root / "MEMORY.md"
        text = index.read_bytes().decode("utf-8").replace(f"- **updated:** {stand_in}\n",
                                                          f"- **updated:** {op['updated']}\n")
        index.write_bytes(text.encode("utf-8"))
        options = session.options()
        result["usage"]["index"] = budget.index_usage(text, options.index_lines, options.index_bytes)
    return result


KINDS: list[Deviation] = [
    Deviation(
        "error-names-the-file", "an error keeps the reference's name, code and message and adds the file's path "
        "(before the message, or after it), also as its details, so a person knows which file to fix",
        "test_memory::test_unparsable_index_is_never_overwritten",
        lambda case, op, got, want: _names_the_file(got, want)),
    Deviation(
        "unslug-title-anomaly", "a note whose '# title' or mm-topic is not a topic slug loads as a malformed-note "
        "anomaly (reported in snapshot_meta and doctor) and the rest of the memory loads (DESIGN.md: one bad file "
        "never hides the others); the reference refuses the whole root with that note's error",
        "test_memory::test_a_malformed_note_is_an_anomaly_and_the_rest_loads",
        _root_refused, _refuse_as_reference),
    Deviation(
        "updated-newline", "an `updated` value with a line break (LF, CR, VT, FF, NEL, U+2028, U+2029) is refused "
        "with E_INVALID naming updated, and nothing is written (DESIGN.md: it would forge index lines); the "
        "reference writes it into MEMORY.md", "test_memory::test_updated_with_a_newline_is_refused",
        _updated_refused, _write_as_reference),
]

