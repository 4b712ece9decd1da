"""The table of ``mmctl``'s commands (:data:`COMMANDS`): each command, its positionals, options and help text.

Owns: the data :mod:`.parser` builds argparse from and every help text comes from. Never does: parsing, printing.
Imported by every one-shot command: plain classes and tuples only (no dataclasses, nothing imported).
"""

from __future__ import annotations

__all__ = ["AGENTS", "COMMANDS", "JSON", "PROJECT", "ROOT", "UNSCOPED", "USER", "Command", "Opt", "Pos",
           "common_options"]


AGENTS = ("dsh", "claude-code", "codex", "other", "git")
"""The agents a candidate's evidence names: the session-log sources, ``other`` logs, and ``git`` conflicts."""


class Opt:
    """An option: ``flag`` (``--content``), ``metavar`` (None for a switch), ``kind`` (``text``, ``switch``, or a
    checked kind: ``int`` a non-negative integer, ``number`` a finite number, ``posint`` a positive integer,
    ``path`` a non-empty path, ``date`` a review date or span, ``key`` a client key), ``choices``; ``bare_is_missing``:
    given with no value, it counts as absent (the command says what it needs).

    Plain classes, not dataclasses or NamedTuples: building those costs milliseconds at import, and every
    one-shot ``mmctl read`` imports this table.
    """

    __slots__ = ("bare_is_missing", "choices", "flag", "help", "kind", "metavar")

    def __init__(self, flag: str, metavar: str | None, help: str, kind: str = "text",
                 choices: tuple[str, ...] | None = None, bare_is_missing: bool = False) -> None:
        self.flag, self.metavar, self.help, self.kind = flag, metavar, help, kind
        self.choices, self.bare_is_missing = choices, bare_is_missing


class Pos:
    """A positional: ``name`` (``topic``), ``help``, ``many`` (any number of them), ``choices``, ``default``;
    ``kind`` ``text`` or ``id`` (a candidate id: a positive integer below 2**63)."""

    __slots__ = ("choices", "default", "help", "kind", "many", "name")

    def __init__(self, name: str, help: str, many: bool = False, choices: tuple[str, ...] | None = None,
                 default: str | None = None, kind: str = "text") -> None:
        self.name, self.help, self.many, self.choices, self.default = name, help, many, choices, default
        self.kind = kind


class Command:
    """One ``mmctl`` command: ``name``, the ``module`` of ``mmctl.cli`` that runs it, its one-line ``summary``,
    its ``positionals`` and ``options``; ``json``: it takes ``--json``; ``reference``: a reference CLI command."""

    __slots__ = ("epilog", "json", "module", "name", "options", "positionals", "reference", "summary")

    def __init__(self, name: str, module: str, summary: str, positionals: tuple[Pos, ...] = (),
                 options: tuple[Opt, ...] = (), json: bool = True, reference: bool = False, epilog: str = "") -> None:
        self.name, self.module, self.summary, self.positionals, self.options = name, module, summary, positionals, \
            options
        self.json, self.reference, self.epilog = json, reference, epilog


ROOT = Opt("--root", "PATH", "the memory root (default: the config file's root, $DSH_MEMORY_ROOT, $DSH_HOME/memory)",
           "path")
JSON = Opt("--json", None, "print the result as one line of JSON", "switch")
PROJECT = Opt("--project", "PATH|KEY", "a project's root: its key, its name (the key without its hash, when one "
              "project has it) or a folder in it (default: the current folder's)")
USER = Opt("--user", None, "the user root alone (memory for every project), not the current folder's project", "switch")
UNSCOPED = frozenset({"help", "completion", "guide", "ui", "watch", "status", "hooks", "sync"})
"""Commands without ``--project``/``--user``: about the daemon or an agent, not one root."""


def common_options(command: Command) -> tuple[Opt, ...]:
    """The options every command takes besides its own: ``--root``, the scope (``--project``, ``--user``) where it
    reads or writes notes and does not define ``--project`` itself, and ``--json`` where it prints a result."""
    own = {o.flag for o in command.options}
    scope = () if command.name in UNSCOPED else tuple(o for o in (PROJECT, USER) if o.flag not in own)
    return (ROOT, *scope, *((JSON,) if command.json else ()))
_CONTENT = Opt("--content", "TEXT", "the note's body; '-' reads it from stdin (UTF-8)", bare_is_missing=True)
_FILE_BODY = Opt("--file", "PATH", "read the body from this file (UTF-8)", "path")
_SUMMARY = Opt("--summary", "S", "the index summary (a value starting with -- goes as --summary='--- draft')")
_TAGS = Opt("--tags", "T", "comma-separated tags")
_LIMIT = Opt("--limit", "N", "at most N results", "int")
_LANG = Opt("--lang", "LANG", "the guide's language", choices=("en", "zh", "auto"))
_MAX_BYTES = Opt("--max-bytes", "N", "the text's budget in UTF-8 bytes (default 6144)", "posint")
_REVIEW_AFTER = Opt("--review-after", "DATE",
                    "re-check the note on DATE (YYYY-MM-DD) or after a span: 10d, 2w, 3m, 1y; '' removes it",
                    "date")
_ALLOW = (Opt("--allow-secret", None, "your own write: keep the secret it holds (recorded; else refused)", "switch"),
          Opt("--allow-hidden", None, "your own write: keep hidden text (bidi, zero-width, tag) in a body", "switch"))

_BUDGET = Opt("--budget", "N", "this write's budget in characters (code points); 0, or none given: the default "
              "(defaultWriteBudget, 4000 unless configured)", "int")

COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("init", "reference", "create the memory root, memories/ and an empty index", reference=True),
    Command("write", "reference", "create or replace a note (never truncated: an over-budget write writes nothing)",
            (Pos("topic", "the note's topic, an ASCII slug"),),
            (_CONTENT, _FILE_BODY, _BUDGET, _SUMMARY, _TAGS,
             _REVIEW_AFTER, *_ALLOW), reference=True),
    Command("read", "reference", "a note, the index, or the index with every note",
            (Pos("topic", "the note's topic (none: the index)"),),
            (Opt("--all", None, "the index and every note", "switch"),), reference=True),
    Command("list", "reference", "every topic, sorted", reference=True),
    Command("search", "reference", "search topics, summaries, tags and bodies",
            (Pos("query", "the words to look for"),),
            (Opt("--mode", "MODE", "the search engine", choices=("auto", "scan", "fts5")), _LIMIT), reference=True),
    Command("budget", "reference", "the live budget report: the index and every note against their caps",
            reference=True),
    Command("digest", "reference", "candidate memories from text, a file or the newest session log; never writes",
            options=(Opt("--file", "PATH", "a session log or text file", "path"),
                     Opt("--text", "TEXT", "the text itself"),
                     Opt("--max-items", "N", "at most N candidates", "int"),
                     Opt("--topic-hint", "S", "a topic to suggest")), reference=True),
    Command("delete", "reference", "delete a note and its index entry (always allowed, even over budget)",
            (Pos("topic", "the note's topic"),), reference=True),
    Command("merge", "queue", "join notes into one (bodies joined, the others deleted); allowed over the index cap "
            "when it shrinks the index", (Pos("topic", "the notes to merge", many=True),),
            (Opt("--into", "TOPIC", "the note that keeps the joined bodies"),
             Opt("--summary", "S", "the joined note's index summary (default: the --into note's, else the first's)"),
             *_ALLOW),
            epilog="Example: mmctl merge deploy-vpn deploy-staging --into deploy"),
    Command("rename", "rename", "rename a topic in one revision: its note, index entry, links from other notes and "
            "the queue's proposals follow", (Pos("topic", "the topic"), Pos("new", "its new name")),
            epilog="Refused, nothing changed, when the new name has a note or is not a slug."),
    Command("uri", "reference", "the topic's canonical URI", (Pos("topic", "the note's topic"),), reference=True),
    Command("status", "status", "the daemon's state (needs the daemon)",
            epilog="The revision only grows: the daemon reserves numbers in blocks of 1000, so a restart skips\n"
                   "to the next block (1, 2, … then 1001)."),
    Command("queue", "queue", "the review queue of candidates the daemon distilled (needs the daemon)",
            (Pos("action", "what to do", choices=("list", "show", "accept", "reject", "undo"), default="list"),
             Pos("id", "candidate ids (show: one; accept, reject, undo: one or more)", many=True, kind="id")),
            (Opt("--status", "S", "list: which ones", choices=("pending", "accepted", "rejected", "expired", "all")),
             _LIMIT, Opt("--offset", "N", "list: skip N", "int"),
             Opt("--all", None, "list: also the candidates hidden by their session's budget", "switch"),
             Opt("--min-score", "S", "list: only candidates scoring at least S as shown (hidden ones too)", "number"),
             Opt("--project", "DIR", "list: only candidates seen in this project (its working directory, or "
                 "its last folder's name as the list shows it; folders below it count)", "path"),
             Opt("--agent", "A", "list: only candidates from this agent (dsh, claude-code, codex, other, git)",
                 choices=AGENTS), Opt("--session", "ID", "list: only candidates first seen in this agent session"),
             Opt("--topic", "T", "accept: write under this topic"),
             Opt("--into", "T", "accept: append to this note instead of writing a new one"),
             _CONTENT, _FILE_BODY, _SUMMARY, _TAGS, Opt("--flagged", None, "accept: flagged ones too", "switch"),
             Opt("--replace", None, "accept: replace an existing note", "switch"),
             Opt("--below", "S", "reject: every pending candidate scoring below S as shown (0.60 is not below 0.6)",
                 "number"),
             Opt("--dry-run", None, "reject --below: list what would be rejected, reject nothing", "switch"),
             Opt("--reason", "R", "reject: why")),
            epilog="actions:\n"
                   "  list              pending candidates best first; --status S: decided ones too, oldest first\n"
                   "  show ID           one candidate: its fields and its body\n"
                   "  accept ID [ID…]   write each candidate as a note (--topic, --into, --content, --replace)\n"
                   "  reject ID [ID…]   reject each for good (--reason; --below S: all under S; --dry-run lists)\n"
                   "  undo ID [ID…]     put each decided or expired one back to pending (undoes an accept's write)\n\n"
                   "Each id of accept, reject or undo is reported on its own line; the exit code is 1 if any failed\n"
                   "(an id already decided, or a flagged one among several without --flagged, counts as failed).\n"
                   "The list shows the visible candidates, best first, flagged last; --all or --min-score the rest.\n"
                   "Deciding empties it; drafts pending 30 days (or held back) expire."),
    Command("project", "project", "the memory home's roots: list; show [KEY|PATH]; adopt TOPIC… --project P (move "
            "notes of the user root into P's root; docs/projects.md)", (Pos("action", "what to do", choices=(
                "list", "show", "adopt"), default="list"), Pos("name", "a key or folder; adopt: topics", many=True)),
            (Opt("--suggest", None, "adopt: print the moves accepted candidates suggest", "switch"),)),
    Command("log", "history", "a topic's kept versions (with the daemon's --git: the root's commits), newest first",
            (Pos("topic", "only the versions (commits) of this topic"),), (_LIMIT,)),
    Command("diff", "history", "what a revision changed, or what changed between two (REV: a commit or r42)",
            (Pos("rev", "one or two revisions: a commit or r42", many=True),)),
    Command("revert", "history", "undo a revision with new writes under every budget (never a history rewrite)",
            (Pos("rev", "the revision: a commit or r42"),)),
    Command("restore", "history", "write a topic back as it was at a revision (a new write, budgets hold)",
            (Pos("topic", "the note's topic"),), (Opt("--at", "REV", "the revision: r42, a version v17 or a commit"),)),
    Command("sync", "history", "commit, fetch, merge by topic, push and reload now; prints what happened",
            epilog="The daemon also syncs every git.syncIntervalMs, and retries a failed sync with back-off.\n"
                   "A topic changed on both ends keeps the newer version; the other becomes a conflict\n"
                   "candidate in the review queue (mmctl queue list)."),
    Command("review", "review", "review pending candidates one at a time, by score, with single keys (needs the "
            "daemon)", options=(Opt("--project", "P", "only candidates from this project"),
                                Opt("--agent", "A", "only candidates from this agent (dsh, claude-code, codex, other, "
                                    "git)", choices=AGENTS),
                                Opt("--min-score", "S", "only candidates scoring at least S", "number")), json=False,
            epilog="Keys: j next (s skips too), k previous, a accept, e edit in $EDITOR then accept, i accept into "
                   "an\nexisting topic, r reject (a reason may follow), u undo the last decision (an accepted note "
                   "is\ndeleted or restored), q quit: the review page's j/k/a/r/e and more."),
    Command("ui", "ui", "open the daemon's review page in the browser (needs `mmd --http`)",
            options=(Opt("--print", None, "print the page's URL (with its token) instead of opening it", "switch"),),
            json=False),
    Command("watch", "status", "print the daemon's events as they come (needs the daemon)",
            options=(Opt("--topic", "T", "only events whose topic starts with T"),
                     Opt("--count", "N", "stop after N events", "int"))),
    Command("propose", "propose", "propose a memory for a person to review, as an agent does (needs the daemon)",
            (Pos("topic", "the note it targets (none: one is proposed)"),), (_CONTENT, _FILE_BODY, _SUMMARY, Opt(
                "--reason", "R", "why it is worth keeping, one line"), Opt("--action", "A", "create, append, replace "
                "or delete (default: append to a note that exists, else create)",
                choices=("create", "append", "replace", "delete")), Opt("--agent", "A",
                "who proposes", choices=AGENTS[:4]), Opt("--session", "ID", "the agent's session id"))),
    Command("nudge", "guide", "the nudge report: pending writes, index budget, suggested actions"),
    Command("guide", "guide", "the agents' guide to this memory", options=(_LANG,), json=False),
    Command("doctor", "doctor", "dangling entries, orphan files, malformed notes, an over-budget index",
            options=(Opt("--fix", None, "repair what is marked fixable (never deletes)", "switch"),)),
    Command("mcp", "mcp", "serve the MCP tools over stdio", options=(_LANG,), json=False),
    Command("inject", "agents", "what an agent should be told now: the index once, then only what changed",
            options=(Opt("--client", "KEY", "whose view (an agent session id; default: mmctl)", "key"), _MAX_BYTES,
                     Opt("--format", "F", "text, json, claude-hook or codex-hook (reads the hook's input on stdin)",
                         choices=("text", "json", "claude-hook", "codex-hook"))),
            epilog="The text is printed, then committed: the next call says only what changed since.\n"
                   "--json is --format json: {mode, text, added, updated, removed, unchanged, reminded, bytes}."),
    Command("due", "agents", "notes whose review date has come (or comes within --within days)",
            options=(Opt("--within", "DAYS", "also list dates up to DAYS days ahead", "int"),)),
    Command("export", "agents", "write the memory block of an instructions file (AGENTS.md, CLAUDE.md)",
            (Pos("what", "what to export", choices=("agents-md",)),),
            (Opt("--file", "PATH", "the file (default ./AGENTS.md); bytes outside the mm:begin/end block are kept",
                 "path"),
             _MAX_BYTES)),
    Command("hooks", "agents", "install or remove the hooks that inject memory into an agent",
            (Pos("action", "what to do", choices=("install", "uninstall")),
             Pos("agent", "which agent", choices=("claude-code", "codex"))),
            (Opt("--scope", "S", "user (~/.claude/settings.json, ~/.codex/hooks.json) or project "
                                 "(./.claude/settings.json, ./.codex/hooks.json)", choices=("user", "project")),
             Opt("--dry-run", None, "print what would change, write nothing", "switch"))),
    Command("completion", "completion", "print the shell completion script (topics complete from the index)",
            (Pos("shell", "the shell", choices=("bash", "zsh", "fish")),), json=False,
            epilog="bash: mmctl completion bash > ~/.local/share/bash-completion/completions/mmctl\n"
                   "zsh:  mmctl completion zsh > ~/.zfunc/_mmctl\n"
                   "fish: mmctl completion fish > ~/.config/fish/completions/mmctl.fish"),
    Command("help", "help", "help on mmctl or on one command", (Pos("command", "the command"),), json=False),
)}
"""Every ``mmctl`` command, in the order ``mmctl --help`` lists them."""
