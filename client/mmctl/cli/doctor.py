"""``mmctl doctor``: what is wrong with a memory root, and the mechanical repairs ``--fix`` may make.

A folder that is not an mm root is refused as every read refuses it
(``E_NOT_INITIALIZED``; only ``init`` and writes create a root). Problems
found (mm v1 §5, §6): dangling entries (an
index entry whose note file is missing); orphan files (``memories/*.md`` that
no entry names); malformed notes; an entry whose ``file`` names no note
(``unsafe-file``: ``../x``, an absolute path, a file outside ``memories/``; its
path is never opened, and every other topic reads and writes as before); an index
over its line or byte cap; an index that does not parse (with its line); a topic
with two entries (``duplicate-entry``, a hand edit: writes of it are refused
until one section is left); merge-conflict markers in the index; notes
without their header; notes that resolve outside the root; temporary files a
crashed writer left; paths others may write (``loose-mode``: the root, its
state folder, MEMORY.md, memories/ and the notes, as ``mmctl status`` reports
them); topics that differ only by case (``case-twins``: one file on a
case-insensitive filesystem); secrets (``secret``: the kind and line, never the value) and
hidden text (``hidden-text``: bidi, zero-width and tag characters, by code point) already in a
note, a summary or tags (issue 29; one a person let in with ``--allow-secret`` or
``--allow-hidden`` says so). Those last four are never fixed automatically: doctor prints the
``chmod``, the rename or the rewrite to do.

``--fix`` only makes repairs that lose nothing: it indexes an orphan file
under its own topic (its body kept, written through the daemon when one owns
the root) and removes the temporary file of a writer that is gone (the real
file is whole). It never deletes a note or an entry: dangling entries, malformed notes and an over-budget index need a
decision, so doctor says which command makes it.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

from mmd.core.errors import MMError
from mmd.core.format import parse_note, twin_entries
from mmd.core.health import case_twins, loose_modes, stale_temp_files
from mmd.core.memory import Memory
from mmd.core.paths import DETAIL_DIR, INDEX_NAME
from mmd.core.rootfs import note_problem
from mmd.core.text import TOPIC_RE

from ..errors import MmctlError
from .output import EXIT_FAILED, EXIT_OK, Ctx

__all__ = ["cmd_doctor", "diagnose", "file_problems", "screen_problems"]


def _problem(kind: str, message: str, fixable: bool = False, **where: str | int) -> dict[str, Any]:
    return {"kind": kind, **where, "message": message, "fixable": fixable}


def diagnose(memory: Memory) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(budget report, problems)`` of a live root; each problem is ``{kind, topic?, file?, message, fixable}``.

    ``kind`` is ``dangling`` | ``orphan`` | ``malformed`` | ``unsafe-file`` | ``duplicate-entry`` | ``case-twins`` |
    ``index-over-budget`` | ``secret`` | ``hidden-text`` (these two add ``field``, ``line`` and ``secret`` or
    ``code``).

    Raises:
        MMError(E_PARSE | E_IO): if MEMORY.md itself cannot be read or parsed.
    """
    report = memory.budget()
    _, entries = memory.store.live_index()
    topics = {e.topic for e in entries}
    problems: list[dict[str, Any]] = []
    unsafe = {e.file: why for e in entries if (why := note_problem(e.file)) is not None}
    for entry in entries:
        if entry.file in unsafe:  # never opened, not even to see whether it exists
            problems.append(_problem(
                "unsafe-file", f"the index entry of {entry.topic} names {entry.file!r}, which is not a note ("
                f"{unsafe[entry.file]}): it is never read, every other topic reads and writes as before; "
                f"`mmctl write {entry.topic} …` writes it to {DETAIL_DIR}/{entry.topic}.md, `mmctl delete "
                f"{entry.topic}` drops the entry (the file it names is left alone)", topic=entry.topic,
                file=entry.file))
        elif not memory.root.joinpath(*entry.file.split("/")).is_file():
            problems.append(_problem("dangling", f"the index names {entry.file}, which does not exist; write the "
                                                 f"note again, or `mmctl delete {entry.topic}` to drop the entry",
                                     topic=entry.topic, file=entry.file))
    for topic, files in twin_entries(entries).items():
        problems.append(_problem(
            "duplicate-entry", f"{INDEX_NAME} holds {len(files)} entries for topic {topic} (notes "
            f"{', '.join(dict.fromkeys(files))}); writes and deletes of {topic} are refused until you join them "
            f"into one section by hand", topic=topic, file=INDEX_NAME))
    folded = {t.lower() for t in topics}
    for name in report["anomalies"]["orphanFiles"]:
        topic = name[:-3]
        ok = bool(TOPIC_RE.fullmatch(topic)) and topic.lower() not in folded
        why = "`mmctl doctor --fix` indexes it under its topic" if ok else \
            "its name is not a free topic slug (or differs only by case from one): rename it, or move its text " \
            "into a note"
        problems.append(_problem("orphan", f"{DETAIL_DIR}/{name} is in no index entry; {why}", ok, topic=topic,
                                 file=f"{DETAIL_DIR}/{name}"))
    for bad in report["anomalies"].get("malformedNotes", []):
        if bad["file"] in unsafe:
            continue  # reported above, with the way out
        problems.append(_problem("malformed", f"{bad['file']} is not an mm v1 note ({bad['message']}); fix its "
                                              f"header by hand or write the topic again", topic=bad["topic"],
                                 file=bad["file"]))
    for group in case_twins(memory.root, entries):
        keep = next((t for t in group if t == t.lower()), group[0])
        others = [t for t in group if t != keep]
        problems.append(_problem(
            "case-twins", f"topics {', '.join(group)} differ only by case: on a case-insensitive filesystem (macOS, "
            f"Windows) they are one file; rename {' and '.join(others)}: write the text of {DETAIL_DIR}/"
            f"{others[0]}.md under another topic (`mmctl write {others[0].lower()}-2 --content …`), then "
            f"`mmctl delete {others[0]}`", topic=keep))
    index = report["index"]
    if index["overBudget"]:
        problems.append(_problem(
            "index-over-budget", f"{INDEX_NAME} has {index['lines']}/{index['lineCap']} lines, "
            f"{index['bytes']}/{index['byteCap']} bytes; consolidate it: merge or delete entries (never truncate)",
            file=INDEX_NAME))
    return report, problems + screen_problems(memory)


def screen_problems(memory: Memory) -> list[dict[str, Any]]:
    """``secret`` and ``hidden-text`` problems of every note's body, summary and tags (issue 29): kind, topic, field
    and line, never a secret's value; a kind the topic's latest kept version let in (a person's ``--allow-secret``,
    ``--allow-hidden``) says so."""
    from mmd.screen.hidden import find_hidden
    from mmd.screen.secrets import find_secrets

    problems: list[dict[str, Any]] = []
    notes = memory.list_notes()
    try:
        latest = memory.store.versions.latest([n.topic for n in notes])
    except MMError:
        latest = {}
    for note in notes:
        allowed = (latest[note.topic].allowed or {}) if note.topic in latest else {}
        let_in = {s["kind"] for s in allowed.get("secrets", [])}
        fields = (("body", note.body), ("summary", note.entry.summary), ("tags", ", ".join(note.entry.tags)))
        for field, text in fields:
            where = f"{note.entry.file}, line {{}} of its body" if field == "body" else f"the {field} of {note.topic}"
            for found in find_secrets(text):
                mark = " (you let it in with --allow-secret)" if found.kind in let_in else \
                    f"; rewrite it without the value (`mmctl write {note.topic} --file …`)"
                problems.append(_problem("secret", f"{where.format(found.line)} holds a {found.kind}{mark}",
                                         topic=note.topic, file=note.entry.file, field=field, line=found.line,
                                         secret=found.kind))
            for hidden in find_hidden(text):
                mark = " (you let it in with --allow-hidden)" if allowed.get("hidden") else \
                    "; remove it (`mmctl read` shows it escaped)"
                problems.append(_problem("hidden-text", f"{where.format(hidden.line)} holds hidden text: {hidden.code} "
                                                        f"{hidden.name} ({hidden.kind}){mark}", topic=note.topic,
                                         file=note.entry.file, field=field, line=hidden.line, code=hidden.code))
    return problems


def _adopt(ctx: Ctx, memory: Memory, problem: dict[str, Any]) -> dict[str, Any]:
    """Index an orphan file under its topic, keeping its body; returns what was done."""
    path = memory.root.joinpath(*problem["file"].split("/"))
    try:
        body = parse_note(path.read_text(encoding="utf-8")).body
    except (OSError, UnicodeDecodeError, MMError) as error:
        return {"file": problem["file"], "done": False, "message": f"cannot read it: {error}"}
    if not body.strip():
        return {"file": problem["file"], "done": False, "message": "its body is empty; nothing to index"}
    budget = max(len(body), memory.options.default_write_budget)
    daemon = ctx.daemon()
    try:
        if daemon is not None:
            outcome = daemon.client.write(problem["topic"], body, budget=budget)
        else:
            outcome = memory.write(problem["topic"], body, budget=budget)
    except (MMError, MmctlError) as error:
        return {"file": problem["file"], "done": False, "message": f"cannot index it: {error.message}"}
    if not outcome.get("ok"):
        return {"file": problem["file"], "done": False, "message": outcome.get("message", "refused")}
    return {"file": problem["file"], "done": True, "message": f"indexed as {outcome['uri']}"}


def cmd_doctor(ctx: Ctx) -> int:
    """``doctor [--fix] [--json]``: exit 0 when nothing is left to fix, 1 otherwise."""
    fix = ctx.args.flag("--fix")
    ctx.need_root()
    unmade = ctx.user_scope_if_unmade()  # a project without its root: check the user root, create nothing
    if unmade is not None and not ctx.json:
        ctx.write(f"project {unmade.label} has no root yet (its first write makes it): checking the user root\n")
    direct = ctx.direct()
    options = direct.options()
    fixed: list[dict[str, Any]] = []
    files = file_problems(options.root)
    if fix and any(p["fixable"] for p in files):
        fixed += [_remove_temp(options.root, p) for p in files if p["fixable"]]
        files = file_problems(options.root)
    try:
        memory = direct.memory(options=options)
        _, problems = diagnose(memory)
    except MMError as error:
        problems = [_problem("unparsable-index", f"{INDEX_NAME} does not parse: {error.message}; fix that line by "
                                                 "hand (the index is never rewritten while it does not parse)",
                             file=INDEX_NAME)]
        return _finish(ctx, str(options.root), files + problems, fixed)
    if fix and any(p["fixable"] for p in problems):
        fixed += [_adopt(ctx, memory, p) for p in problems if p["fixable"]]
        _, problems = diagnose(memory)
        files = file_problems(options.root)  # an adopted orphan was rewritten with its header
    return _finish(ctx, str(options.root), files + problems, fixed)


_CONFLICT = re.compile(r"^(<{7}|={7}|>{7})( |$)")


def file_problems(root: Path) -> list[dict[str, Any]]:
    """What the files show before any parsing: ``conflict-markers`` in MEMORY.md (with their line numbers),
    ``temp-file`` left by a crashed writer (fixable: its pid is gone, the real file is whole), ``no-header``
    (a note without its ``# topic`` line), ``outside-root`` (a note that resolves outside the root),
    ``loose-mode`` (a path others may write, :func:`mmd.core.health.loose_modes`).
    """
    problems: list[dict[str, Any]] = []
    try:
        index_lines = (root / INDEX_NAME).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        index_lines = []
    marks = [str(n) for n, line in enumerate(index_lines, 1) if _CONFLICT.match(line)]
    if marks:
        problems.append(_problem("conflict-markers", f"{INDEX_NAME} holds merge-conflict markers on line(s) "
                                                     f"{', '.join(marks)}; resolve the merge by hand, then "
                                                     "`mmctl doctor` again", file=INDEX_NAME))
    for loose in loose_modes(root):
        shown = shlex.quote(str(root if loose["path"] == "." else root / loose["path"]))
        problems.append(_problem("loose-mode", f"{loose['path']} is writable by {loose['writable_by']} "
                                               f"({loose['mode']}): another user could change the memory; "
                                               f"`chmod go-w {shown}`", file=loose["path"]))
    for temp in stale_temp_files(root):
        rel, pid = temp["path"], temp["pid"]
        why = f"its writer (pid {pid}) still runs: leave it" if temp["alive"] else \
            "a writer crashed before renaming it; the real file is whole, so `mmctl doctor --fix` removes it"
        problems.append(_problem("temp-file", f"{rel} is a temporary file: {why}", not temp["alive"], file=rel))
    for path in sorted((root / DETAIL_DIR).glob("*.md")):
        rel = path.relative_to(root).as_posix()
        topic = path.name[:-3]
        if path.is_symlink():  # notes are opened with O_NOFOLLOW (mmd.core.rootfs): a link is never read
            problems.append(_problem("outside-root", f"{rel} is a symbolic link to {os.path.realpath(path)}; notes "
                                                     "are never read through a link: move the file into the root",
                                     topic=topic, file=rel))
            continue
        try:
            head = path.read_text(encoding="utf-8", errors="replace").split("\n", 1)[:1]
        except OSError:
            continue
        if not head or not head[0].startswith("# "):
            problems.append(_problem("no-header", f"{rel} has no '# {topic}' header line, so the whole "
                                                  f"file is read as a body; `mmctl write {topic} --file {path}` "
                                                  "rewrites it with its header", topic=topic, file=rel))
    return problems


def _remove_temp(root: Path, problem: dict[str, Any]) -> dict[str, Any]:
    try:
        (root / problem["file"]).unlink()
    except OSError as error:
        return {"file": problem["file"], "done": False, "message": f"cannot remove it: {error.strerror}"}
    return {"file": problem["file"], "done": True, "message": "removed the temporary file of a crashed writer"}


def _finish(ctx: Ctx, root: str, problems: list[dict[str, Any]], fixed: list[dict[str, Any]]) -> int:
    if ctx.json:
        ctx.print_json({"root": root, "ok": not problems, "problems": problems, "fixed": fixed})
    else:
        lines = [f"memory root: {root}"]
        lines += [f"fixed: {f['file']}: {f['message']}" if f["done"] else f"not fixed: {f['file']}: {f['message']}"
                  for f in fixed]
        lines += [f"{p['kind']}: {p['message']}" for p in problems]
        lines.append("no problems found" if not problems else f"{len(problems)} problem(s)"
                     + (" (`mmctl doctor --fix` repairs the ones marked fixable)"
                        if any(p["fixable"] for p in problems) else ""))
        ctx.write("\n".join(lines) + "\n")
    return EXIT_OK if not problems else EXIT_FAILED
