"""The conformance runner's deviation rules: where mmd deliberately differs from the reference, and why.

Each :class:`Deviation` names the difference, its reason and the test that
pins our behaviour; ``explained_by`` says which rule, if any, explains a
difference between our result and a vector's. Rules look at the case, the op
and the two results, never at a vector's name. ``files`` differences come as
the pseudo-op ``{"op": "files"}`` with ``{"files": …}`` on both sides.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from mmd.core import format, rootfs, search
from mmd.core.errors import MMError
from mmd.core.paths import STATE_DIR

from .conformance_base import Deviation, same
from .conformance_kinds import KINDS

__all__ = ["DEVIATIONS", "Deviation", "explained_by", "explaining", "files_as_reference", "has_crlf", "same"]


_REF_CJK = re.compile("[\u3400-\u9fff]")


def _beyond_reference_tokens(value: str) -> bool:
    """Text our tokenizer reads differently: non-ASCII letters/digits outside U+3400–U+9FFF, or NFKC changes."""
    if unicodedata.normalize("NFKC", value) != value:
        return True
    return any(ord(ch) > 127 and not _REF_CJK.match(ch) and (ch.isalnum() or ord(ch) > 0xFFFF) for ch in value)


def _search_shape(outcome: dict[str, Any]) -> Any:
    """A search outcome without scores, order and snippets (what the weights cannot change)."""
    if "result" not in outcome:
        return outcome
    result = dict(outcome["result"])
    matches = result.pop("matches")
    result["count"] = len(matches)
    if not result["truncated"]:
        result["rows"] = sorted((m["topic"], m["uri"], m["updated"]) for m in matches)
    return result


def _ids_as_configured(value: Any, memory_id: str) -> Any:
    """The vector's value with every memory id (fields and URIs) replaced by the configured one."""
    if isinstance(value, dict):
        return {k: (memory_id if k == "memoryId" and isinstance(v, str) else _ids_as_configured(v, memory_id))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_ids_as_configured(v, memory_id) for v in value]
    if isinstance(value, str) and value.startswith("mm://"):
        return re.sub(r"^mm://[^/]+/", f"mm://{memory_id}/", value)
    return value


def has_crlf(case: dict[str, Any]) -> bool:
    texts = [*case.get("setup_files", {}).values(), *(str(o.get("text", "")) + str(o.get("content", ""))
                                                      for o in case["ops"])]
    return any("\r\n" in t for t in texts)


def _scan_search(op: dict[str, Any], want: dict[str, Any]) -> bool:
    return op["op"] == "search" and want.get("result", {}).get("engine") == "scan"


def _fts5_superset(op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> bool:
    """An FTS5 search where we find every row the reference finds and more, because the query has text
    ``unicode61`` keeps glued (a non-ASCII scan token: CJK grams, other scripts) or scan tokens matched
    rows its phrases missed; every score stays positive."""
    if op["op"] != "search" or want.get("result", {}).get("engine") != "fts5":
        return False
    mine, theirs = got.get("result"), want["result"]
    if not isinstance(mine, dict) or mine.get("engine") != "fts5" or mine["total"] < theirs["total"]:
        return False
    wanted, found = {m["topic"] for m in theirs["matches"]}, {m["topic"] for m in mine["matches"]}
    if not (theirs["truncated"] or mine["truncated"] or wanted <= found):
        return False
    glued = any(not token.isascii() for token in search.tokenize(op["query"]))
    return (glued or mine["total"] > theirs["total"]) and all(m["score"] > 0 for m in mine["matches"])


DEVIATIONS: list[Deviation] = [
    Deviation(
        "crlf", "CRLF files parse as LF; the reference drops every CRLF index entry and keeps CRs in bodies "
        "(DESIGN.md: no silent data loss)", "test_format::test_crlf_index_parses_every_entry",
        lambda case, op, got, want: has_crlf(case)),
    Deviation(
        "search-limit", "search limit < 1 is E_INVALID; the reference returns nothing for 0 and slices from the "
        "end for negatives (DESIGN.md)", "test_memory::test_search_limit_below_one_is_invalid",
        lambda case, op, got, want: op["op"] == "search" and isinstance(op.get("limit"), int)
        and op["limit"] < 1 and got.get("error", {}).get("code") == "E_INVALID"),
    Deviation(
        "tokenizer", "scan tokens are NFKC-lowercased Unicode letter/digit runs plus CJK grams for Han (astral "
        "planes too), kana and Hangul; the reference knows only [a-z0-9] and U+3400-U+9FFF (issue 2)",
        "test_search::test_tokenize_kana_hangul_and_astral_han",
        lambda case, op, got, want: (op["op"] == "search" and _beyond_reference_tokens(op["query"]))
        or (op["op"] == "tokenize" and _beyond_reference_tokens(op["text"]))),
    Deviation(
        "scan-weights", "scan weights topic x3 > summary/tags x2 > body x1 as mm v1 §8 says (reference: topic x2, "
        "everything else x1); snippets use U+2026 and fit maxSnippetChars. Totals and matched rows must agree",
        "test_search::test_scan_ranks_topic_over_summary_over_body",
        lambda case, op, got, want: _scan_search(op, want)
        and _search_shape(got) == _search_shape(_ids_as_configured(want, case["config"]["memoryId"]))),
    Deviation(
        "fts5-scan-tokens", "the FTS5 engine also matches the scan engine's tokens (CJK unigrams + bigrams, NFKC "
        "letter/digit runs) and adds their bm25, so it never finds less than scan (issue 17); the reference's "
        "unicode61 keeps a CJK run and the letters glued to it as one token and finds nothing for 部署 or itgc "
        "in 重跑gen-itgc后. Latin queries keep the reference's exact bm25",
        "test_search_cjk::test_fts5_topics_are_a_superset_of_scan_topics",
        lambda case, op, got, want: _fts5_superset(op, got, want)),
    Deviation(
        "snippet-ellipsis", "snippets end in U+2026 and never exceed maxChars; the reference writes the mojibake "
        "'\u00e2\u20ac\u00a6' and can overflow (DESIGN.md)", "test_search::test_make_snippet_never_exceeds_cap",
        lambda case, op, got, want: op["op"] == "make_snippet" and isinstance(got.get("result"), str)
        and len(got["result"]) <= max(op["maxChars"], 1) and "\u00e2\u20ac\u00a6" in str(want.get("result"))),
    Deviation(
        "one-memory-id", "one memory id per snapshot: note.memoryId, note.uri and search URIs all use the "
        "configured id; the reference mixes the file's mm-id and the configured one (DESIGN.md)",
        "test_memory::test_one_memory_id_per_snapshot",
        lambda case, op, got, want: same(got, _ids_as_configured(want, case["config"]["memoryId"]), False)),
]


_MEANT = re.compile(r"(?m) \(did you mean [^\n]*\?\)$")
"""The near words mmctl offers after a mistyped topic, option or command (``mmctl.cli.suggest``)."""


def _cli_as_reference(result: dict[str, Any]) -> dict[str, Any]:
    """A ``cli`` result with our listed differences undone: the ``mmctl:`` prefix, the figures line under a
    refused write (its message without "(see usage)"), the way out of a full index said instead of
    "(see usage.index)", the near words offered after a mistyped topic, and exit code 2 for usage."""
    out = dict(result)
    stderr = re.sub(r"(?m)^(mmctl: .*(?<!\(never truncate\)))\n(  body \d+/\d+ chars )", r"\1 (see usage)\n\2",
                    out.get("stderr", ""))
    stderr = re.sub(r"(?m)^  body \d+/\d+ chars .*\n", "", stderr)
    stderr = re.sub(r"(?m)^usage: mmctl .*\n", "", stderr)
    stderr = re.sub(r"(?m)^  the way out: .*\n", "", stderr)
    stderr = re.sub(r"(?m)^(mmctl: the MEMORY.md index exceeds its hard limit; consolidate/rewrite the index "
                    r"\(never truncate\))$", r"\1 (see usage.index)", _MEANT.sub("", stderr))
    out["stderr"] = re.sub(r"(?m)^mmctl: ", "dsh-memory: ", stderr)
    if out["stderr"].startswith("dsh-memory: unknown command:"):
        out["stderr"] = out["stderr"].split("\n")[0]  # the help text that follows is mmctl's own
    if out.get("exitCode") == 2:
        out["exitCode"] = 1
    return out


def _cli_explained(got: dict[str, Any], want: dict[str, Any], usage: bool) -> bool:
    if "result" not in got or "result" not in want:
        return False
    mine, theirs = got["result"], dict(want["result"])
    if (mine.get("exitCode") == 2) != usage:
        return False
    if str(theirs.get("stderr", "")).startswith("dsh-memory: unknown command:"):
        theirs["stderr"] = theirs["stderr"].split("\n")[0]
    ours = _cli_as_reference(mine)
    if str(theirs.get("stderr", "")).startswith("dsh-memory: internal error:"):  # first line, newline or not
        theirs["stderr"], ours["stderr"] = theirs["stderr"].rstrip("\n"), ours["stderr"].rstrip("\n")
    return same(ours, theirs, False)


DEVIATIONS += [
    Deviation(
        "cli-prefix", "mmctl's messages on stderr start with 'mmctl:' where the reference's say 'dsh-memory:' "
        "(the same text otherwise; after 'unknown command' comes mmctl's own help; under a refused write, "
        "a line of its usage figures (its message without '(see usage)'), and for a full index the way out "
        "instead of '(see usage.index)'; after a "
        "topic with no note, the topics near it: '(did you mean deploy-region?)', issue 30)",
        "test_mmctl_cli::test_messages_on_stderr_start_with_mmctl",
        lambda case, op, got, want: op["op"] == "cli" and _cli_explained(got, want, usage=False)),
    Deviation(
        "cli-usage-exit-2", "a usage error (missing argument, bad flag value, unknown command) exits 2 and adds a "
        "one-line 'usage: mmctl …' hint, as issues 5 and 10 ask; the reference exits 1 for those too",
        "test_mmctl_cli::test_usage_errors_exit_2",
        lambda case, op, got, want: op["op"] == "cli" and _cli_explained(got, want, usage=True)),
]


def _nothing_to_delete(op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Our ``delete`` of a missing topic says so plainly; the reference's line is ``deleted T: not found``."""
    mine, theirs = got.get("result", {}), want.get("result", {})
    if op["op"] != "cli" or op["args"][:1] != ["delete"] or "--json" in op["args"] or len(op["args"]) < 2:
        return False
    topic = op["args"][1]
    return (theirs.get("stdout") == f"deleted {topic}: not found\n"
            and _MEANT.sub("", str(mine.get("stdout"))) == f"nothing to delete: no note for topic {topic}\n"
            and {k: v for k, v in mine.items() if k != "stdout"} == {k: v for k, v in theirs.items() if k != "stdout"})


DEVIATIONS += [
    Deviation(
        "delete-says-nothing-to-delete", "`mmctl delete T` of a topic with no note prints 'nothing to delete: no "
        "note for topic T' (a fresh user read 'deleted T: not found' as a deletion); the exit code (0) and the "
        "--json outcome stay the reference's",
        "test_mmctl_cli::test_deleting_a_missing_topic_says_there_was_nothing_to_delete",
        lambda case, op, got, want: _nothing_to_delete(op, got, want)),
]


_READS = ("read", "list", "search", "budget", "uri", "doctor", "status", "nudge")
_REFUSALS = re.compile(r"^mmctl: (\w+: )?(unknown option|unexpected argument|argument --[\w-]+: invalid choice|"
                       r"argument --[\w-]+: expected one argument|search requires a <query>: an empty query)")
_PATHISH = re.compile(r"\S*(/|\.md\b|\.toml\b)\S*")


def _help_superset(op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Our help lists every command the reference's help lists (its usage lines name them after the program)."""
    mine, theirs = got.get("result", {}), want.get("result", {})
    if op["op"] != "cli" or (op["args"][:1] not in ([], ["help"], ["--help"], ["-h"])):
        return False
    if mine.get("exitCode") != 0 or theirs.get("exitCode") != 0:
        return False
    names = set(re.findall(r"(?m)^\s+dsh-memory (\w+)", str(theirs.get("stdout", ""))))
    return bool(names) and all(f"\n  {name} " in str(mine.get("stdout", "")) for name in names)


def _without_paths(message: str) -> str:
    return " ".join(_PATHISH.sub("", message).replace(":", " ").split())


def _not_a_root(op: dict[str, Any], got: dict[str, Any]) -> bool:
    result = got.get("result", {})
    return (op["op"] == "cli" and bool(op["args"]) and op["args"][0] in _READS and result.get("exitCode") == 1
            and str(result.get("stderr", "")).startswith("mmctl: E_NOT_INITIALIZED: no memory root at "))


def _files_apart_from_state(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """The files are the same once every ``.mmd/`` folder (a root's lock and state) is left out of ours."""
    mine = {k: v for k, v in got.get("files", {}).items() if f"/{STATE_DIR}/" not in f"/{k}"}
    return "files" in want and same(mine, want["files"], False)


def _files_without_silent_root(case: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Ours lack only the empty root a read created silently in the reference (MEMORY.md and nothing else new)."""
    mine, theirs = got.get("files", {}), want.get("files", {})
    refused = any(o["op"] == "cli" and o["args"][:1] and o["args"][0] in _READS for o in case["ops"])
    return refused and set(theirs) - set(mine) == {"MEMORY.md"} and all(theirs.get(k) == v for k, v in mine.items())


DEVIATIONS += [
    Deviation(
        "help-superset", "`mmctl help` lists every command of the reference's help under our program name, plus "
        "our own commands (status, queue, watch, nudge, guide, doctor, mcp, help)",
        "test_mmctl_cli::test_help_is_printed_for_no_command_help_and_dash_h",
        lambda case, op, got, want: _help_superset(op, got, want)),
    Deviation(
        "state-folders", "a root mmctl or mmd wrote to keeps its lock and state in its own .mmd/ folder, also when "
        "that root is not the test's main one (e.g. under $HOME); mm readers ignore .mmd/",
        "test_mmctl_cli::test_a_direct_write_keeps_its_lock_in_the_roots_state_folder",
        lambda case, op, got, want: op["op"] == "files" and _files_apart_from_state(got, want)),
    Deviation(
        "no-silent-roots", "reads, list, search, budget, uri, doctor, status and nudge on a folder that is not an mm "
        "root fail with E_NOT_INITIALIZED naming the path and how it was resolved; only init and writes create a "
        "root (issue 10); the reference creates an empty root",
        "test_cli_usage::test_a_bad_invocation_is_refused_clearly_and_changes_nothing",
        lambda case, op, got, want: _not_a_root(op, got)
        or (op["op"] == "files" and _files_without_silent_root(case, got, want))),
    Deviation(
        "cli-refuses-what-the-reference-ignored", "unknown options, extra arguments, bad choices (--mode bogus), "
        "an option without its value and an empty search are refused with exit 2 (issue 10); the reference ignored "
        "them", "test_cli_usage::test_a_bad_invocation_is_refused_clearly_and_changes_nothing",
        lambda case, op, got, want: op["op"] == "cli" and got.get("result", {}).get("exitCode") == 2
        and bool(_REFUSALS.match(str(got.get("result", {}).get("stderr", ""))))),
]


_ESCAPED = "dsh-memory: internal error: MemoryError: "
_NAMED = re.compile(r"mmctl: (E_[A-Z_]+): (.*)")


def _core_error_named(op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> bool:
    """The reference let a core error escape as ``internal error: MemoryError: M``; ours prints ``CODE: M`` (M with
    the file's path added at most) and a line with the fix, with the same exit code and stdout."""
    mine, theirs = got.get("result", {}), want.get("result", {})
    if op["op"] != "cli" or not str(theirs.get("stderr", "")).startswith(_ESCAPED):
        return False
    lines = str(mine.get("stderr", "")).splitlines()
    named = _NAMED.fullmatch(lines[0]) if len(lines) == 2 else None
    if named is None or "internal error" in mine.get("stderr", ""):
        return False
    message = str(theirs["stderr"]).split("\n")[0][len(_ESCAPED):]
    same_text = message in named[2] or _without_paths(named[2]) == _without_paths(message)
    return same_text and all(mine.get(k) == theirs.get(k) for k in ("exitCode", "stdout", "json"))


DEVIATIONS += [
    Deviation(
        "core-error-named", "a core error a user can cause (a bad topic, an index that does not parse) is printed as "
        "'CODE: message' and a second line with the fix; the reference prints 'internal error: MemoryError: "
        "message' and a stack trace (issue 10: 'internal error' is left for real bugs)",
        "test_mmctl_cli::test_an_escaping_core_error_names_the_code_the_value_and_the_fix",
        lambda case, op, got, want: _core_error_named(op, got, want)),
]


def _file_text(case: dict[str, Any], arg: str) -> str | None:
    """The text the case put at a ``cli`` path argument (``<ROOT>/…``, ``<DSH_HOME>/…``, or ``root/…`` from the
    runner's folder), from its setup files or an earlier ``write_file`` op; None when it put none there."""
    for mark, files, prefix in (("<ROOT>/", "setup_files", ""), ("root/", "setup_files", ""),
                                ("<DSH_HOME>/", "setup_home_files", "$HOME/")):
        if arg.startswith(mark):
            rel = arg[len(mark):]
            written = [o["text"] for o in case["ops"] if o["op"] == "write_file" and o["path"] == prefix + rel]
            found = written[-1] if written else case.get(files, {}).get(rel)
            return found if isinstance(found, str) else None
    return None


def _agent_log_digest(case: dict[str, Any], op: dict[str, Any], got: dict[str, Any]) -> bool:
    """``mmctl digest --file F`` where F holds a DSH, Claude Code or Codex log, and our answer says which agent."""
    from mmd.sources.recognise import recognise_text

    args = [str(a) for a in op.get("args", [])] if op["op"] == "cli" else []
    if args[:1] != ["digest"]:
        return False
    given = [a.split("=", 1)[1] for a in args if a.startswith("--file=")]
    given += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--file"]
    text = _file_text(case, given[-1]) if given else None
    agent = recognise_text(text) if text is not None else None
    mine = got.get("result", {})
    said = (mine.get("json") or {}).get("agent") == agent or f"({agent} log)" in str(mine.get("stdout", ""))
    return agent is not None and mine.get("exitCode") == 0 and said


DEVIATIONS += [
    Deviation(
        "digest-agent-log", "`mmctl digest --file F` of a DSH, Claude Code or Codex log (told by its first records) "
        "reads it through the daemon's adapter and candidate pipeline: only model-visible text, never tool "
        "output, injected context or reasoning, and it says which agent (issue 12); the reference flattens every "
        "line of any JSONL file. Other files keep the reference's digest",
        "test_mmctl_digest::test_digest_of_an_agent_log_goes_through_the_daemons_adapter_and_pipeline",
        lambda case, op, got, want: _agent_log_digest(case, op, got)),
]


def _setup_index(case: dict[str, Any]) -> str:
    return str(case.get("setup_files", {}).get("MEMORY.md", ""))


def _has_header_extras(case: dict[str, Any]) -> bool:
    return bool(format.header_extras(_setup_index(case)))


def _names_a_file_outside_memories(case: dict[str, Any]) -> bool:
    try:
        entries = format.parse_index(_setup_index(case)).entries
    except MMError:
        return False
    return any(rootfs.note_problem(e.file) is not None for e in entries)


def files_as_reference(case: dict[str, Any], files: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    """The root's files with the two file-level deviations below undone: header lines we keep
    (``header-lines-kept``), and non-notes we never delete (``notes-under-memories``: files named by an
    entry outside memories/ that the reference removed). Applies only to cases those rules cover."""
    out = dict(files)
    index = out.get("MEMORY.md")
    if isinstance(index, str) and _has_header_extras(case):
        extras = format.header_extras(index)
        if extras:
            out["MEMORY.md"] = index.replace("\n" + "\n".join(extras) + "\n", "", 1)
    if _names_a_file_outside_memories(case):
        for entry in format.parse_index(_setup_index(case)).entries:
            rel = "/".join(p for p in entry.file.split("/") if p not in ("", "."))
            if rootfs.note_problem(entry.file) is not None and rel not in want:
                out.pop(rel, None)
    return out


DEVIATIONS += [
    Deviation(
        "header-lines-kept", "hand-written lines in MEMORY.md's header area (free text, unknown '>' meta) are kept "
        "by every rewrite; the reference drops them (issue 15: no silent data loss)",
        "test_core_hardening::test_hand_written_header_lines_are_kept",
        lambda case, op, got, want: _has_header_extras(case)),
    Deviation(
        "notes-under-memories", "an index entry's file may name only a regular file under memories/: another "
        "file is reported as a malformed note (never read, never deleted); the reference reads and deletes any "
        "safe relative path, MEMORY.md included (issue 11)",
        "test_core_hardening::test_an_entry_may_name_only_a_note_under_memories",
        lambda case, op, got, want: _names_a_file_outside_memories(case)),
]


def _twin_topics(case: dict[str, Any]) -> dict[str, list[str]]:
    """Topics the setup's MEMORY.md indexes more than once (a hand edit), with their entries' files."""
    try:
        return format.twin_entries(format.parse_index(_setup_index(case)).entries)
    except MMError:
        return {}


def _twin_refused(case: dict[str, Any], op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> bool:
    """A write or delete of a topic indexed twice is refused (E_CONFLICT) where the reference keeps one section;
    what follows sees the root as set up: both entries listed, the files untouched."""
    twins = _twin_topics(case)
    if not twins:
        return False
    if op["op"] in ("write", "delete") and op.get("topic") in twins:
        return got.get("error", {}).get("code") == "E_CONFLICT" and "result" in want
    if op["op"] == "list":
        listed = [r.get("topic") for r in got.get("result") or []]
        return all(listed.count(t) == len(files) for t, files in twins.items())
    if op["op"] == "files":
        mine = {k: v for k, v in got.get("files", {}).items() if not k.startswith(STATE_DIR + "/")}
        return bool(mine == case.get("setup_files"))
    return False


DEVIATIONS += [
    Deviation(
        "twin-entries-kept", "a write or delete of a topic MEMORY.md indexes twice (a hand edit) is refused with "
        "E_CONFLICT naming both lines, and nothing is written; the reference keeps the first section and drops "
        "the other's summary, text and note link (mm v1 §7: writes never destroy prior content)",
        "test_core_hardening::test_a_topic_indexed_twice_by_hand_is_never_rewritten_over_its_twin",
        _twin_refused),
]


def _unsafe_entry_loaded(case: dict[str, Any], op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> bool:
    """The reference refused a root (or a reopen of it) because one entry's ``file`` is not a safe path, where we
    loaded it; the pure ``parse_index`` op is not this rule's (it keeps the reference's refusal)."""
    error = want.get("error") or {}
    return (op["op"] != "parse_index" and error.get("code") == "E_PARSE" and "error" not in got
            and str(error.get("message", "")).startswith("file path must"))


DEVIATIONS += [
    Deviation(
        "unsafe-file-entry", "a root whose MEMORY.md holds an entry with an unsafe file ('../x', '/etc/passwd') "
        "loads: that entry is reported (malformedNotes, doctor's unsafe-file, daemon.status index.broken) and "
        "never followed, and every other topic reads and writes; the reference refuses the whole root with "
        "E_PARSE. mm v1 asks readers to verify paths, not to let one bad entry make a root unusable (issue 26). "
        "The pure parse_index keeps the reference's refusal",
        "test_unsafe_entries::test_an_unsafe_file_entry_is_reported_and_every_other_topic_reads_and_writes",
        _unsafe_entry_loaded),
]


def explaining(case: dict[str, Any], op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> Deviation | None:
    """The deviation that explains ``got != want``, or None."""
    return next((d for d in DEVIATIONS if d.explains(case, op, got, want)), None)


def explained_by(case: dict[str, Any], op: dict[str, Any], got: dict[str, Any], want: dict[str, Any]) -> str | None:
    """The name of the deviation that explains ``got != want``, or None."""
    found = explaining(case, op, got, want)
    return found.name if found else None


DEVIATIONS += KINDS
