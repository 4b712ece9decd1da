"""Memory reaches the agent from ``mmctl``: one injection, through the daemon or on the files (issue 14).

:func:`plan` gives an :class:`Injection`: the answer of ``memory.inject`` and a
:meth:`Injection.commit` to call once the text reached the agent (``mmctl
inject`` commits after stdout was written; a text that could not be written is
never committed, so it is given again). With a daemon owning the root the
daemon keeps the client's view (state.db); without one the view is a file
under the root's ``.mmd/inject/`` folder, read and written while holding the
root's write lock, as direct writes do. The two stores are separate: a client
that switches between them gets one baseline more.

Also here: the hooks' input (:func:`hook_input`) and output (:func:`hook_output`,
:func:`hook_error`) shapes, the same for Claude Code (https://code.claude.com/docs/en/hooks)
and Codex (https://developers.openai.com/codex/hooks; ``codex-rs/hooks/schema/generated``):
JSON on stdin with ``session_id`` and ``hook_event_name``; context added by printing
``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``; nothing printed adds
nothing; a ``systemMessage`` reaches the person, never the model. Codex refuses any other
JSON, so nothing else is printed (``tests/fixtures/hook-schemas`` holds the published
schemas the outputs are tested against; its context passes :func:`guarded`). And the baseline text of ``mmctl export
agents-md``, and the text a hook gives from the files when the daemon does not answer
(:func:`stale_text`, saying once that memory may be stale).

On the files as through the daemon, a topic the daemon holds (a sync's or an outside edit's flagged text, the
root's ``.mmd/held.json``: :mod:`mmd.inject.held`) is shown held, never its text, and whatever reaches an agent
or an export passes a last guard (:func:`guarded`: secrets redacted, hidden text escaped; issue 29).

Owns: the offline view files and their TTL, the hook's client key. Never: renders
text itself (:mod:`mmd.inject` does), or reads the environment (the caller passes it).

Imported by the hook before every prompt (issue 31): plain classes, not dataclasses, and what only the files
need (hashing, the clock's datetime, the durable writes) is imported where it is used, so a hook that a daemon
answers loads :mod:`json` and little else from here (``tests/test_hook_imports.py`` pins it).
"""

from __future__ import annotations

import json
import os

from mmd.core.errors import ErrorCode, MMError
from mmd.core.paths import STATE_DIR
from mmd.core.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime
    from pathlib import Path
    from typing import Any

    from mmd.core.clock import Clock
    from mmd.core.options import MemoryOptions

__all__ = ["HOOK_AGENTS", "HOOK_EVENTS", "INJECT_DIR", "STALE", "STALE_PROMPT", "TTL_DAYS", "UNASKED", "UNASKED_PROMPT",
           "HookInput", "Injection",
           "baseline_text", "guarded", "hook_error", "hook_input", "hook_output", "plan", "plan_direct",
           "session_context", "stale_text"]

INJECT_DIR = "inject"
"""The folder under ``<root>/.mmd/`` holding the views of clients injected without a daemon."""
TTL_DAYS = 30
"""Days after its last commit that an offline client's view is ignored (the daemon's ``injectTtlDays`` default)."""
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit")
"""The hook events ``mmctl inject --format claude-hook|codex-hook`` answers."""
HOOK_AGENTS = {"claude-hook": ("claude-code", "Claude Code"), "codex-hook": ("codex", "Codex")}
"""Each hook format's client-key prefix and agent name."""
STALE = "Memory may be stale: mmd did not answer within 1 s, so this was read from its files."
"""The line a ``SessionStart`` hook adds (once) when it answers from the files."""
STALE_PROMPT = "Memory may be stale: mmd did not answer within 1 s; what changed in memory is not shown until it does."
UNASKED = ("Memory may be stale: MMCTL_NO_DAEMON keeps mmd from being asked and its lock is held, so this was read "
           "from its files.")
"""The last line of :func:`stale_text` when the daemon was not asked (``MMCTL_NO_DAEMON=1``) and the lock was held."""
UNASKED_PROMPT = ("Memory may be stale: MMCTL_NO_DAEMON keeps mmd from being asked and its lock is held; what changed "
                  "in memory is not shown.")
"""What a prompt's hook gives then."""
"""What a ``UserPromptSubmit`` hook says (alone) when the daemon does not answer."""
_RESET_SOURCES = ("clear", "compact")
"""SessionStart sources after which the agent no longer holds what it was shown: it gets a baseline again."""


class Injection:
    """One planned injection.

    Attributes:
        result: ``{mode, text, added, updated, removed, unchanged, reminded, bytes, token, …}``.
        commit: advances the client's view to this injection; call it once the text reached the agent.
    """

    __slots__ = ("commit", "result")

    def __init__(self, result: dict[str, Any], commit: Callable[[], None]) -> None:
        self.result, self.commit = result, commit

    def __repr__(self) -> str:
        return f"Injection(result={self.result!r})"

    @property
    def text(self) -> str:
        """The text for the agent ('' for mode ``none``)."""
        return str(self.result["text"])


def plan(client_key: str, *, daemon: Any | None, options: Callable[[], MemoryOptions], now: Clock,
         max_bytes: int | None = None, reset: bool = False, lock_wait_s: float | None = None,
         prompt: bool = False) -> Injection:
    """The injection for ``client_key``: through ``daemon`` (a :class:`mmctl.Client`) when given, else on the files
    (waiting at most ``lock_wait_s`` seconds for the root's lock, default :data:`mmctl.backend.LOCK_WAIT_S`).
    ``prompt``: a hook before an agent's prompt (the daemon counts it and may add the session's ``distill`` line;
    on the files there is none: no queue knows the session's proposals).

    Raises:
        RpcError / MmctlError: as the daemon answers (a bad client key or ``max_bytes`` is ``E_INVALID``).
        MMError(E_INVALID | E_IO | E_PARSE): on the files, as :func:`plan_direct`.
    """
    if daemon is None:
        return plan_direct(options(), client_key, now=now, max_bytes=max_bytes, reset=reset, lock_wait_s=lock_wait_s)
    result = daemon.inject(client_key, max_bytes=max_bytes, reset=reset, **({"prompt": True} if prompt else {}))
    if result.get("token") is None:  # a project without a root yet: nothing was given, nothing to confirm
        return Injection(result, lambda: None)
    return Injection(result, lambda: daemon.injected(client_key, result["token"]))


def _view_path(root: Path, client_key: str) -> Path:
    from mmd.core.sha import sha256_hex

    digest = sha256_hex(client_key.encode("utf-8"))[:32]
    return root / STATE_DIR / INJECT_DIR / f"{digest}.json"


def _read_view(path: Path, client_key: str, now: datetime) -> Any:
    """The stored ClientView of ``client_key``, or None (no file, another key, expired, unreadable JSON)."""
    from datetime import timedelta

    from mmd.core.clock import parse_iso_ms
    from mmd.inject.delta import ClientView

    try:
        data = json.loads(path.read_bytes())
        if data.get("client") != client_key or parse_iso_ms(data["committedAt"]) < now - timedelta(days=TTL_DAYS):
            return None
        return ClientView.from_json(data["view"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, MMError):
        return None  # a damaged view file costs one baseline, never an error


def plan_direct(options: MemoryOptions, client_key: str, *, now: Clock, max_bytes: int | None = None,
                reset: bool = False, lock_wait_s: float | None = None) -> Injection:
    """The injection for ``client_key`` planned on the files; its view lives in ``<root>/.mmd/inject/``.

    The snapshot is read and the view loaded under the root's write lock; the
    commit writes the new view (atomically) under the lock again.

    Raises:
        MMError(E_INVALID): for a bad client key or ``max_bytes``.
        MMError(E_NOT_INITIALIZED | E_PARSE | E_IO): the root cannot be read, or is locked too long.
    """
    from base64 import urlsafe_b64encode
    from datetime import date

    from mmd.core.clock import iso_ms
    from mmd.core.durable import atomic_write
    from mmd.core.snapshot import load_snapshot
    from mmd.inject.baseline import DEFAULT_MAX_BYTES
    from mmd.inject.delta import plan_injection

    from .backend import patient_lock

    _check_key(client_key)
    if not options.root.is_dir():
        raise MMError(ErrorCode.E_NOT_INITIALIZED, f"memory root does not exist: {options.root} (mmctl init "
                                                   "creates it)")
    moment = now()
    path = _view_path(options.root, client_key)
    with patient_lock(options.root, lock_wait_s, revision=False):
        snapshot = _held(load_snapshot(options, loaded_at=iso_ms(moment), engine="scan"))
        view = None if reset else _read_view(path, client_key, moment)
    injection = plan_injection(view, snapshot, today=date.fromisoformat(iso_ms(moment)[:10]),
                               max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)
    token = urlsafe_b64encode(os.urandom(12)).rstrip(b"=").decode()  # secrets.token_urlsafe(12), without its ~5 ms
    result = {**injection.to_json(), "token": token, "revision": None, "committed": False}
    result["text"] = guarded(result["text"])

    def commit() -> None:
        data = {"client": client_key, "committedAt": iso_ms(now()), "token": token,
                "view": injection.view.to_json()}
        with patient_lock(options.root, lock_wait_s, revision=False):
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write(path, json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), 0o600)
        result["committed"] = True

    return Injection(result, commit)


def _held(snapshot: Any) -> Any:
    """``snapshot`` with the topics its root's daemon holds shown held (:func:`mmd.inject.held.held_view`)."""
    from mmd.inject.held import HeldTopics, held_view

    return held_view(snapshot, HeldTopics(snapshot.root).get())


def guarded(text: str, *, providers: bool = False) -> str:
    """The last guard on a text for an agent or an export: secrets redacted (the own table's kinds: no time spent
    loading the providers' patterns in a hook; ``providers``: theirs too, every kind the write door refuses, for a
    long-lived process such as the MCP server), hidden text escaped (``\\u{202E}``)."""
    if not text:
        return text
    from mmd.screen.hidden import escape_hidden
    from mmd.screen.secrets import redact

    return escape_hidden(redact(text, providers=providers))


def _check_key(client_key: str) -> None:
    """The daemon's rule for client keys (1 to 200 code points, no control characters), on the files too."""
    if not client_key.strip() or len(client_key) > 200 or any(ord(c) < 0x20 or ord(c) == 0x7F for c in client_key):
        raise MMError(ErrorCode.E_INVALID, "a client key must be 1 to 200 characters without control characters, "
                                           f"got {client_key!r}")


class HookInput(Record):
    """What Claude Code or Codex sends a command hook on stdin (the fields used here).

    Attributes:
        session_id: the agent's session id.
        event: ``hook_event_name`` (``SessionStart`` | ``UserPromptSubmit``).
        source: SessionStart's ``source`` (``startup`` | ``resume`` | ``clear`` | ``compact``), else ''.
        form: ``claude-hook`` | ``codex-hook``.
        cwd: the agent's working folder (its project, ``docs/projects.md``), else ''.
    """

    __slots__ = ("session_id", "event", "source", "form", "cwd")

    def __init__(self, session_id: str, event: str, source: str, form: str = "claude-hook", cwd: str = "") -> None:
        self.session_id, self.event, self.source, self.form, self.cwd = session_id, event, source, form, cwd

    @property
    def client_key(self) -> str:
        """The injection client of this session: ``claude-code:<session_id>`` or ``codex:<session_id>``."""
        return f"{HOOK_AGENTS[self.form][0]}:{self.session_id}"

    @property
    def reset(self) -> bool:
        """The session's context was cleared or compacted: give a baseline again."""
        return self.event == "SessionStart" and self.source in _RESET_SOURCES


def hook_input(data: bytes, form: str = "claude-hook") -> HookInput:
    """Parse a hook's stdin (``form``: ``claude-hook`` | ``codex-hook``).

    Raises:
        MMError(E_INVALID): if it is not a JSON object with a string ``session_id`` and a
            ``hook_event_name`` of :data:`HOOK_EVENTS`.
    """
    agent = HOOK_AGENTS[form][1]
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise MMError(ErrorCode.E_INVALID, f"--format {form} reads {agent}'s hook input: a JSON object "
                                           "on stdin, got something else") from None
    if not isinstance(value, dict) or not isinstance(value.get("session_id"), str) or not value["session_id"]:
        raise MMError(ErrorCode.E_INVALID, f"the hook input on stdin has no session_id (is this run by a {agent} "
                                           "SessionStart or UserPromptSubmit hook?)")
    event = value.get("hook_event_name")
    if event not in HOOK_EVENTS:
        raise MMError(ErrorCode.E_INVALID, f"hook_event_name must be one of {', '.join(HOOK_EVENTS)}, got {event!r}")
    source, cwd = value.get("source"), value.get("cwd")
    return HookInput(value["session_id"], event, source if isinstance(source, str) else "", form,
                     cwd if isinstance(cwd, str) and cwd.startswith("/") else "")


def hook_output(event: str, text: str) -> str:
    """What the hook prints: ``{"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}``
    plus a newline, or '' when there is nothing to add (the agent then adds nothing). The same for both
    agents: Codex validates the shape strictly (no other key, ``hookEventName`` set), Claude Code reads it."""
    if not text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": guarded(text)}},
                      ensure_ascii=False) + "\n"


def hook_error(message: str) -> str:
    """What a hook prints when it cannot inject: ``{"systemMessage": "mmctl: <message>"}`` plus a newline, shown to
    the person as a warning by both agents, never added to the model's context (the hook still exits 0)."""
    return json.dumps({"systemMessage": f"mmctl: {message}"}, ensure_ascii=False) + "\n"


def stale_text(event: str, roots: Sequence[tuple[str, MemoryOptions]], *, now: Clock, max_bytes: int | None = None,
               where: str | None = None, asked: bool = True) -> str:
    """What a hook gives when the daemon does not answer: for ``SessionStart`` the baseline of the files of each
    of ``roots`` (``(scope label, options)``, the scope's own first: a project's root, then the user root behind
    it), the byte budget split and the parts joined as a daemon's answer is (:mod:`mmd.inject.scopes`; ``where``:
    the project's folder), with :data:`STALE` as its last line; for a prompt :data:`STALE_PROMPT` alone. Takes no
    lock and commits no view (the daemon keeps the session's view; it resumes when the daemon answers). ``asked``
    False (``MMCTL_NO_DAEMON=1``): the last line says mmd was not asked (:data:`UNASKED`, :data:`UNASKED_PROMPT`).

    Raises:
        MMError(E_INVALID | E_NOT_INITIALIZED | E_PARSE | E_IO): as :func:`baseline_text`, for any root.
    """
    if event != "SessionStart":
        return STALE_PROMPT if asked else UNASKED_PROMPT
    from mmd.inject.scopes import DEFAULT_MAX_BYTES, budget_split, join_texts

    last = STALE if asked else UNASKED
    room = max(1, (DEFAULT_MAX_BYTES if max_bytes is None else max_bytes) - len(last.encode()) - 1)
    budgets = budget_split(room, len(roots))
    parts = [(label, baseline_text(options, now=now, max_bytes=budget).rstrip("\n"))
             for (label, options), budget in zip(roots, budgets, strict=True)]
    return join_texts(parts, where).rstrip("\n") + "\n" + last


def session_context(event: str, text: str, distill: str | None = None) -> str:
    """What a hook gives for ``event``: at ``SessionStart`` the agents' guide (:func:`mmd.inject.guide.with_guide`)
    before ``text``, so every session learns how memory works; a prompt's ``text`` with the session's one
    distillation line after it when the daemon gave one (``distill``)."""
    if event != "SessionStart":
        return f"{text}\n\n{distill}" if text and distill else text or distill or ""
    from mmd.inject.guide import with_guide

    return with_guide(text)


def baseline_text(options: MemoryOptions, *, now: Clock, max_bytes: int | None = None) -> str:
    """The baseline of the root's files as they are now (``mmctl export agents-md``), the newest and most recently
    updated notes with their text, held topics shown held, through :func:`guarded`.

    Raises:
        MMError(E_INVALID): for a bad ``max_bytes``. MMError(E_NOT_INITIALIZED | E_PARSE | E_IO): as the snapshot.
    """
    from mmd.core.clock import iso_ms
    from mmd.core.snapshot import load_snapshot
    from mmd.inject.baseline import DEFAULT_MAX_BYTES, command_for, render_baseline

    snapshot = _held(load_snapshot(options, loaded_at=iso_ms(now()), engine="scan"))
    bodies = {n.topic: n.body for n in reversed(snapshot.notes)}  # a topic indexed twice: its first note
    return guarded(render_baseline(snapshot.entries, memory_id=snapshot.memory_id, command=command_for(snapshot.root),
                                   max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes,
                                   bodies=bodies).text)


def state_files(root: Path) -> list[Path]:
    """The offline view files of ``root`` (for ``mmctl doctor`` and tests)."""
    folder = root / STATE_DIR / INJECT_DIR
    return sorted(folder.glob("*.json")) if folder.is_dir() else []

