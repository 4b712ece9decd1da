"""The daemon's configuration: one frozen :class:`Config`, built once in ``main`` and handed down.

Precedence, highest first: command-line flags, then the TOML config file
(``--config``, else ``$XDG_CONFIG_HOME/mmd/config.toml``, else
``~/.config/mmd/config.toml``; a missing default file is fine, a missing
explicit one is an error), then the environment (``$DSH_MEMORY_ROOT``,
``$DSH_HOME``), then the embedded defaults. :data:`OPTIONS` is the one table of
option names, flags, types and defaults; the argument parser, the file reader
and the validation all read it.

The file accepts the reference's config block (``root``, ``memoryId``,
``indexLines``, ``indexBytes``, ``detailMaxBytes``, ``defaultWriteBudget``,
``[search] mode|limit|maxSnippetChars``, ``[nudge] enabled|intervalMs``,
``lang``) plus the daemon's own keys in a ``[daemon]`` table, among them
``[[daemon.sources]]`` tables (``kind``, ``path``, ``enabled``): the agent
session-log folders (:class:`SourceSetting`; kinds are :data:`mmd.sources.FOLDERS`), and the
instruction files whose memory block it keeps fresh (``[export] files``); and the ``[git]``
table (``enabled``, ``remote``, ``branch``, ``syncIntervalMs``). This module reads files
and the given environment mapping only: sockets, the lock and the watcher open
in :mod:`.lifecycle`. No other daemon module reads ``os.environ``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from mmd.core.config_file import (
    AGENT_CHOICES,
    ConfigError,
    check_choice,
    check_kind,
    config_path,
    load_config,
    options_refused,
)
from mmd.core.errors import MMError
from mmd.core.options import MemoryOptions
from mmd.core.paths import dsh_home, expand_path
from mmd.sources import FOLDERS, SESSIONS_KIND
from mmd.wire.endpoints import endpoints_for

from .config_git import GitSettings, git_settings
from .listen import http_listen

__all__ = ["OPTIONS", "Config", "ConfigError", "GitSettings", "Option", "build_config", "parse_args", "parser_for"]

LANGS = ("auto", "en", "zh")
"""Accepted ``lang`` values (language of the agent guide)."""
LOG_LEVELS = ("debug", "info", "warning", "error")
"""Accepted ``daemon.logLevel`` values."""


@dataclass(frozen=True, slots=True)
class Option:
    """One configurable value: its dotted file key, its flag, its kind and default.

    ``kind`` is ``int`` (a positive integer), ``bool``, ``str``, ``path``
    (``~`` and ``$VAR`` expanded), ``paths`` (a list of absolute paths once
    expanded; the flag may be repeated), ``endpoint``, ``sources`` (a repeatable
    ``KIND=PATH`` flag; ``[[daemon.sources]]`` tables in the file), ``kinds``
    (a repeatable ``KIND`` flag; a list of kinds in the file) or ``argv`` (a list of
    strings; the flag is split as a shell would); ``default`` None
    means "derived" (root, sessions folder, endpoints).
    """

    key: str
    flag: str
    kind: str
    default: Any
    help: str


OPTIONS: tuple[Option, ...] = (
    Option("root", "--root", "path", None, "memory root (default $DSH_MEMORY_ROOT, else $DSH_HOME/memory)"),
    Option("memoryId", "--memory-id", "str", None, "memory id used in mm:// URIs (default: the one the root's "
           "MEMORY.md records, else local)"),
    Option("indexLines", "--index-lines", "int", None, "MEMORY.md cap, in lines (default: the root's mm-caps "
           "header, else 200)"),
    Option("indexBytes", "--index-bytes", "int", None, "MEMORY.md cap, in UTF-8 bytes (default: the root's "
           "mm-caps header, else 25600)"),
    Option("detailMaxBytes", "--detail-max-bytes", "int", 65536, "detail file cap, in UTF-8 bytes"),
    Option("defaultWriteBudget", "--default-write-budget", "int", 4000, "per-write budget, in code points"),
    Option("search.mode", "--search-mode", "str", "auto", "auto | scan | fts5"),
    Option("search.limit", "--search-limit", "int", 10, "default number of search matches"),
    Option("search.maxSnippetChars", "--max-snippet-chars", "int", 160, "snippet cap, in code points"),
    Option("nudge.enabled", "--nudge", "bool", True, "publish periodic memory/nudge events"),
    Option("nudge.intervalMs", "--nudge-interval-ms", "int", 1_800_000, "nudge period, in milliseconds"),
    Option("nudge.distill", "--distill", "str", "once",
           "once: a session that ran a few prompts without a proposal is asked, once, to propose what it settled; off"),
    Option("lang", "--lang", "str", "auto", "guide language: auto | en | zh"),
    Option("agents.writes", "--agent-writes", "str", "propose",
           "propose: an agent's MCP mem_write / mem_delete is queued for review; direct: it writes at once"),
    Option("daemon.sessions", "--sessions", "path", None,
           f"DSH session logs, the {SESSIONS_KIND} source's folder (default $DSH_HOME/sessions)"),
    Option("daemon.sources", "--source", "sources", (),
           f"an agent's session-log folder, KIND=PATH, repeatable (KIND: {' | '.join(FOLDERS)}); "
           "default: each agent's own folder, read when it exists"),
    Option("daemon.sourcesOff", "--no-source", "kinds", (), "turn a source off, KIND (repeatable)"),
    Option("daemon.ingest", "--ingest", "bool", True, "follow the agent-log folders and fill the review queue"),
    Option("daemon.sessionIdleSeconds", "--session-idle-seconds", "int", 300,
           "quiet time after which a followed agent session counts as ended (session-end nudge), seconds"),
    Option("daemon.rpc", "--rpc", "endpoint", None, "RPC endpoint (default ipc://<runtime>/mmd/<key>.rpc)"),
    Option("daemon.pub", "--pub", "endpoint", None, "event endpoint (default ipc://<runtime>/mmd/<key>.pub)"),
    Option("daemon.sessionTtlMs", "--session-ttl-ms", "int", 1_800_000, "idle time before a session expires, ms"),
    Option("daemon.heartbeatMs", "--heartbeat-ms", "int", 5000, "daemon/heartbeat period, in milliseconds"),
    Option("daemon.maxRequestBytes", "--max-request-bytes", "int", 4 * 1024 * 1024,
           "largest request answered, in bytes (every frame and the whole message); larger ones get E_TOO_LARGE"),
    Option("daemon.maxQueuedBytes", "--max-queued-bytes", "int", 64 * 1024 * 1024,
           "most request bytes held by requests in flight (one client at most a quarter); more get E_BUSY"),
    Option("daemon.curveSecretKeyFile", "--curve-secret-key-file", "path", None,
           "ZeroMQ CURVE server certificate (zmq.auth format); required for tcp:// endpoints"),
    Option("daemon.curveClientKeysDir", "--curve-client-keys-dir", "path", None,
           "folder of the public certificates of the clients allowed in; required for tcp:// endpoints"),
    Option("daemon.logLevel", "--log-level", "str", "info", "debug | info | warning | error"),
    Option("daemon.injectTtlDays", "--inject-ttl-days", "int", 30,
           "days after its last confirmed injection that a client's view is forgotten (it then gets a baseline)"),
    Option("export.files", "--export-file", "paths", (),
           "instruction files (AGENTS.md, CLAUDE.md) whose <!-- mm:begin --> block is refreshed after each revision"),
    Option("candidates.perSession", "--per-session", "int", None,
           "visible candidates per agent session (default: 2 to 6, by the session's length)"),
    Option("candidates.expireDays", "--expire-days", "int", 30,
           "days a rule draft stays pending, counted from when it was queued, before it is expired"),
    Option("candidates.backfillShown", "--backfill-shown", "int", 24,
           "rule drafts a first backfill of old logs shows in all (the newest sessions' best; the rest expire)"),
    Option("candidates.command", "--extractor-command", "argv", None,
           "extractor run once per ended session: utterances as JSON on stdin, candidates as JSON on stdout"),
    Option("candidates.timeoutMs", "--extractor-timeout-ms", "int", 60_000,
           "how long the extractor command may run, in milliseconds"),
    Option("git.enabled", "--git", "bool", False,
           "keep the root's history in git: one commit per revision, sync with a remote (issue 18)"),
    Option("git.remote", "--git-remote", "str", "origin", "the git remote NAME synced with"),
    Option("git.branch", "--git-branch", "str", None, "the branch synced (default: the repository's current one)"),
    Option("git.syncIntervalMs", "--git-sync-interval-ms", "int", 300_000,
           "period of the automatic sync with the remote, in milliseconds"),
    Option("http.listen", "--http", "str", None,
           "serve the review page at HOST:PORT, loopback only (127.0.0.1:0 = any free port); off by default"),
)
_BY_KEY = {o.key: o for o in OPTIONS}

if TYPE_CHECKING:
    from .config_sources import SourceSetting
REPEATED = ("sources", "kinds")
"""Option kinds whose flag may be given more than once (each value is kept, in order)."""


@dataclass(frozen=True, slots=True)
class Config:
    """Everything the daemon needs, validated. Built by :func:`build_config`.

    Attributes:
        memory: the memory options (root, caps, search, nudge).
        sessions_dir: the DSH session logs folder (the ``dsh`` source's folder).
        sources: every source kind's setting, in :data:`mmd.sources.FOLDERS` order.
        ingest: follow the sources' folders and fill the review queue.
        session_idle_s: quiet time before a followed agent session counts as ended, seconds.
        rpc_endpoint, pub_endpoint: ZeroMQ endpoints (``ipc://`` or ``tcp://``).
        session_ttl_ms: idle time after which a session expires, milliseconds.
        heartbeat_ms: ``daemon/heartbeat`` period, milliseconds.
        max_request_bytes: largest request (each frame and the whole message) answered normally, bytes.
        max_queued_bytes: most request bytes held by in-flight requests, bytes (one client: a quarter).
        curve_secret_key, curve_public_key: Z85 CURVE server keys, or None.
        curve_clients_dir: folder of allowed client public certificates (zmq.auth), or None.
        lang: ``auto`` | ``en`` | ``zh``.
        log_level: ``debug`` | ``info`` | ``warning`` | ``error``.
        config_file: the file read, or None.
        notify_socket: ``$NOTIFY_SOCKET`` (systemd), or None.
        watchdog_usec: ``$WATCHDOG_USEC``, microseconds, or None.
        journal: stderr goes to journald (``$JOURNAL_STREAM`` set).
        inject_ttl_days: days a client's injection view is kept after its last confirmation.
        export_files: absolute paths of the files whose memory block the daemon refreshes.
        per_session: ``candidates.perSession``, visible candidates per agent session (None: scaled by size).
        expire_days: ``candidates.expireDays``, days a rule draft stays pending before it expires.
        backfill_shown: ``candidates.backfillShown``, rule drafts a first backfill shows in all.
        extractor: ``candidates.command``, the extractor command (empty: none).
        extractor_timeout_ms: ``candidates.timeoutMs``, its time limit, milliseconds.
        git: the ``[git]`` settings (off by default).
        agent_writes: ``agents.writes``, ``propose`` | ``direct`` (the MCP server reads it from the file too).
        distill: ``nudge.distill``, ``once`` | ``off``.
        http_listen: ``(host, port)`` of the review page (a loopback address; port 0 = any free one), or None.
    """

    memory: MemoryOptions
    sessions_dir: Path
    sources: tuple[SourceSetting, ...]
    ingest: bool
    session_idle_s: int
    rpc_endpoint: str
    pub_endpoint: str
    session_ttl_ms: int
    heartbeat_ms: int
    max_request_bytes: int
    max_queued_bytes: int
    curve_secret_key: bytes | None
    curve_public_key: bytes | None
    curve_clients_dir: Path | None
    lang: str
    log_level: str
    config_file: Path | None
    notify_socket: str | None
    watchdog_usec: int | None
    journal: bool
    inject_ttl_days: int = 30
    export_files: tuple[Path, ...] = ()
    per_session: int | None = None
    expire_days: int = 30
    backfill_shown: int = 24
    extractor: tuple[str, ...] = ()
    extractor_timeout_ms: int = 60_000
    git: GitSettings = GitSettings()
    http_listen: tuple[str, int] | None = None
    agent_writes: str = "propose"
    distill: str = "once"

    @property
    def root(self) -> Path:
        """The memory root (absolute)."""
        return self.memory.root


_SERVICE_USAGE = "mmd service {install,uninstall,status} [--dry-run] [--no-start] [-- DAEMON FLAGS]"


def _epilog(env: Mapping[str, str]) -> str:
    """The tail of ``mmd --help``: the ``service`` subcommand and the default config file and root here."""
    from mmd.core.paths import resolve_root

    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    default_file = Path(base) / "mmd" / "config.toml"
    state = "present" if default_file.is_file() else "absent: the defaults apply"
    return (f"subcommands:\n  {_SERVICE_USAGE}\n      run mmd as a user service (systemd on Linux, launchd on "
            f"macOS); `mmd service --help` for more\n"
            f"  mmd merge-index BASE OURS THEIRS PATH\n      the merge driver git runs for a root kept with "
            f"--git (registered by mmd itself)\n\n"
            f"defaults here:\n  config file  {default_file} ({state})\n"
            f"  memory root  {resolve_root(None, env)} (created, parents included, if missing)\n\n"
            "Flags override the config file, which overrides $DSH_MEMORY_ROOT / $DSH_HOME, which override "
            "the defaults.")


def _path_value(raw: str) -> str:
    """A path flag's value as given; an empty or blank one is a usage error (exit 2), never the default."""
    if not raw.strip():
        raise argparse.ArgumentTypeError("expects a path, not an empty value")
    return raw


def parser_for(env: Mapping[str, str]) -> argparse.ArgumentParser:
    """The ``mmd`` argument parser, built from :data:`OPTIONS`; its help names the defaults for ``env``.

    A usage error prints ``mmd: <message>`` and a one-line usage hint on stderr and exits 2.
    """
    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            self.exit(2, f"mmd: {message}{_meant(message, list(self._option_string_actions))}\n"
                         f"usage: mmd [OPTIONS] | {_SERVICE_USAGE} (see `mmd --help`)\n")

    parser = Parser(prog="mmd", description="The Memory Standard (mm v1) memory daemon: owns one memory root, "
                    "serves JSON-RPC over ZeroMQ, digests agent session logs into a review queue.",
                    usage=f"mmd [OPTIONS]\n       {_SERVICE_USAGE}", epilog=_epilog(env), allow_abbrev=False,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", dest="config", default=None, metavar="PATH", type=_path_value,
                        help="TOML config file (default below)")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    for opt in OPTIONS:
        if opt.kind == "bool":
            parser.add_argument(opt.flag, dest=opt.key, default=None, action=argparse.BooleanOptionalAction,
                                help=opt.help)
        elif opt.kind == "paths":
            parser.add_argument(opt.flag, dest=opt.key, default=None, action="append", metavar="PATH",
                                type=_path_value, help=opt.help)
        elif opt.kind in REPEATED:
            parser.add_argument(opt.flag, dest=opt.key, default=None, action="append",
                                metavar="KIND=PATH" if opt.kind == "sources" else "KIND", help=opt.help)
        else:
            default = "" if opt.default is None else f" (default {opt.default})"
            parser.add_argument(opt.flag, dest=opt.key, default=None, metavar=opt.kind.upper(),
                                type=_path_value if opt.kind == "path" else str, help=opt.help + default)
    return parser


def _meant(message: str, flags: Sequence[str]) -> str:
    """`` (did you mean --sessions?)`` for argparse's ``unrecognized arguments: --sessons …``: the flags nearest the
    first unknown one (``difflib``'s ratio ≥ 0.75), or ''."""
    if not message.startswith("unrecognized arguments: "):
        return ""
    import difflib

    word = next((w.split("=", 1)[0] for w in message.split()[2:] if w.startswith("--")), None)
    close = difflib.get_close_matches(word, flags, n=2, cutoff=0.75) if word else []
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def parse_args(argv: Sequence[str], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Flags given on the command line, as ``{dotted key: raw value}`` (absent flags are left out).

    ``--config PATH`` comes back under the key ``"config"``, ``--version`` under ``"version"`` (a bool).
    ``env`` (default empty) only fills the defaults that ``--help`` prints.

    Raises:
        SystemExit(2): on an unknown flag, an extra argument or a flag missing its value, after
            ``mmd: <message>`` and a one-line usage hint on stderr; SystemExit(0) after ``--help``.
    """
    parser = parser_for(env if env is not None else {})
    return {k: v for k, v in vars(parser.parse_args(list(argv))).items() if v is not None}


def build_config(flags: Mapping[str, Any], env: Mapping[str, str]) -> Config:
    """Merge flags > file > environment > defaults into a validated :class:`Config`.

    Args:
        flags: as returned by :func:`parse_args` (strings, or bools for switches).
        env: the process environment (``os.environ`` in ``main``).

    Raises:
        ConfigError: naming the key, the value and why, for an unknown file key,
            a wrong type, a bad value, an unreadable file or key file, or a
            ``tcp://`` endpoint without CURVE keys.
    """
    config_file, from_file = _read_file(flags.get("config"), env)
    raw: dict[str, Any] = {}
    for opt in OPTIONS:
        if opt.kind in REPEATED:
            continue  # merged per kind by _source_settings
        if opt.key in flags:
            raw[opt.key] = _from_flag(opt, flags[opt.key])
        elif opt.key in from_file:
            raw[opt.key] = _check_type(opt, from_file[opt.key])
        else:
            raw[opt.key] = opt.default
    memory = _memory_options(raw, env)
    for key, choices in (("lang", LANGS), ("daemon.logLevel", LOG_LEVELS), *AGENT_CHOICES.items()):
        check_choice(key, raw[key], choices)
    sessions = _path(raw["daemon.sessions"], env) if raw["daemon.sessions"] else dsh_home(env) / "sessions"
    from .config_sources import source_settings

    sources = source_settings(flags, from_file, env, sessions, "daemon.sessions" in flags)
    derived = endpoints_for(memory.root, env)
    rpc = raw["daemon.rpc"] or derived.rpc
    pub = raw["daemon.pub"] or derived.pub
    secret, public = _curve_keys(raw["daemon.curveSecretKeyFile"], env)
    clients = _path(raw["daemon.curveClientKeysDir"], env) if raw["daemon.curveClientKeysDir"] else None
    if clients is not None and not clients.is_dir():
        raise ConfigError("daemon.curveClientKeysDir", raw["daemon.curveClientKeysDir"], "is not a folder")
    for key, endpoint in (("daemon.rpc", rpc), ("daemon.pub", pub)):
        _check_endpoint(key, endpoint, secret is not None and clients is not None)
    if rpc == pub:
        raise ConfigError("daemon.pub", pub, "must differ from daemon.rpc")
    watchdog = env.get("WATCHDOG_USEC", "")
    return Config(
        memory=memory,
        sessions_dir=next(s.folder for s in sources if s.kind == SESSIONS_KIND),
        sources=sources,
        ingest=raw["daemon.ingest"],
        session_idle_s=raw["daemon.sessionIdleSeconds"],
        rpc_endpoint=rpc,
        pub_endpoint=pub,
        session_ttl_ms=raw["daemon.sessionTtlMs"],
        heartbeat_ms=raw["daemon.heartbeatMs"],
        max_request_bytes=raw["daemon.maxRequestBytes"],
        max_queued_bytes=raw["daemon.maxQueuedBytes"],
        curve_secret_key=secret,
        curve_public_key=public,
        curve_clients_dir=clients,
        lang=raw["lang"],
        log_level=raw["daemon.logLevel"],
        config_file=config_file,
        per_session=raw["candidates.perSession"],
        expire_days=raw["candidates.expireDays"],
        backfill_shown=raw["candidates.backfillShown"],
        extractor=tuple(raw["candidates.command"] or ()),
        extractor_timeout_ms=raw["candidates.timeoutMs"],
        notify_socket=env.get("NOTIFY_SOCKET") or None,
        watchdog_usec=int(watchdog) if watchdog.isdigit() and int(watchdog) > 0 else None,
        journal=bool(env.get("JOURNAL_STREAM")),
        inject_ttl_days=raw["daemon.injectTtlDays"],
        export_files=_export_files(raw["export.files"], env),
        git=git_settings(raw),
        http_listen=_listen(raw["http.listen"]),
        agent_writes=raw["agents.writes"],
        distill=raw["nudge.distill"],
    )


def _read_file(explicit: str | None, env: Mapping[str, str]) -> tuple[Path | None, dict[str, Any]]:
    """The config file's path and its keys flattened to dotted names; ({}, None) when there is none."""
    path = config_path(explicit, env)
    if path is None:
        return None, {}
    data = load_config(path, explicit is not None)
    for key, value in data.items():
        if key not in _BY_KEY:
            raise ConfigError(key, value, f"unknown key in {path}")
    return path, data


def _from_flag(opt: Option, value: Any) -> Any:
    """A flag's string turned into the option's kind (an ``argv`` flag is split as a shell would)."""
    if opt.kind == "argv":
        import shlex

        try:
            return _check_type(opt, shlex.split(value))
        except ValueError as error:
            raise ConfigError(opt.flag, value, f"cannot be split into words: {error}") from None
    if opt.kind == "int":
        try:
            return _check_type(opt, int(value))
        except ValueError:
            raise ConfigError(opt.flag, value, "must be a positive integer") from None
    return _check_type(opt, value)


def _check_type(opt: Option, value: Any) -> Any:
    """``value`` if it has the option's kind, else a ConfigError (:func:`mmd.core.config_file.check_kind`)."""
    return check_kind(opt.key, opt.kind, value)


def _memory_options(raw: Mapping[str, Any], env: Mapping[str, str]) -> MemoryOptions:
    """The core options; the core's own E_INVALID message is mapped back to its key."""
    try:
        return MemoryOptions.create(
            root=raw["root"] or None, env=env, memory_id=raw["memoryId"], index_lines=raw["indexLines"],
            index_bytes=raw["indexBytes"], detail_max_bytes=raw["detailMaxBytes"],
            default_write_budget=raw["defaultWriteBudget"], search_mode=raw["search.mode"],
            search_limit=raw["search.limit"], max_snippet_chars=raw["search.maxSnippetChars"],
            nudge_enabled=raw["nudge.enabled"], nudge_interval_ms=raw["nudge.intervalMs"])
    except MMError as error:
        raise options_refused(error, raw) from None


def _export_files(raw: Sequence[str], env: Mapping[str, str]) -> tuple[Path, ...]:
    """``export.files`` as absolute paths (``~`` and ``$VAR`` expanded), each once, in the given order.

    Raises:
        ConfigError: for a relative path (the daemon's working folder is no place to guess from).
    """
    out: list[Path] = []
    for value in raw:
        path = Path(expand_path(value, env))
        if not path.is_absolute():
            raise ConfigError("export.files", value, "must be an absolute path (~ and $VAR are expanded)")
        if path not in out:
            out.append(path)
    return tuple(out)


def _path(raw: str, env: Mapping[str, str]) -> Path:
    return Path(os.path.abspath(expand_path(raw, env)))


def _check_endpoint(key: str, endpoint: str, has_curve: bool) -> None:
    """Only ``ipc://`` and, with CURVE keys, ``tcp://`` endpoints."""
    if endpoint.startswith("ipc://"):
        if len(endpoint) <= len("ipc://"):
            raise ConfigError(key, endpoint, "names no socket path")
        if len(endpoint[len("ipc://"):].encode()) > 107:
            raise ConfigError(key, endpoint, "socket path longer than 107 bytes (the AF_UNIX limit)")
    elif endpoint.startswith("tcp://"):
        if not has_curve:
            raise ConfigError(key, endpoint,
                              "tcp:// is refused without ZeroMQ CURVE keys (set daemon.curveSecretKeyFile "
                              "and daemon.curveClientKeysDir)")
    else:
        raise ConfigError(key, endpoint, "must start with ipc:// or tcp://")


def _listen(raw: str | None) -> tuple[str, int] | None:
    try:
        return http_listen(raw)
    except ValueError as error:
        raise ConfigError("http.listen", raw, str(error)) from None


def _curve_keys(raw: str | None, env: Mapping[str, str]) -> tuple[bytes | None, bytes | None]:
    """(secret, public) Z85 keys from a zmq.auth certificate file, or (None, None)."""
    if not raw:
        return None, None
    path = _path(raw, env)
    try:
        import zmq.auth

        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as error:
        raise ConfigError("daemon.curveSecretKeyFile", raw, f"cannot load a CURVE certificate: {error}") from None
    if secret is None:
        raise ConfigError("daemon.curveSecretKeyFile", raw, "holds no secret key")
    return secret, public
