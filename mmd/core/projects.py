"""Projects of the memory home: a folder's project, its identity and key, where its root lives.

``docs/projects.md`` is the contract. A folder's project is the git repository
holding it (worktrees and the main checkout are one project), else the folder an
agent session ran in. Its identity is ``git:<normalized origin URL>`` when the
repository has an ``origin`` remote, else ``path:<real path>``; its key is
``<name>-<8 hex of the identity's SHA-256>``, a folder name that is the same on
every machine that cloned the same remote.

Everything here reads files only (``.git`` folders and files, the repository's
``config``): no ``git`` subprocess, so the hook before every prompt can afford it.
Callers pass paths in; this module never reads ``os.environ``.

Owns: repository discovery, origin URL normalization, keys, the home's layout
(``<user root>/projects/<key>/``, the opt-in ``<repo>/.mm/``) and ``project.json``.
Never: creates a memory root's files (the store does), or runs a process.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ErrorCode, MMError
from .lazyre import lazy_compile
from .paths import INDEX_NAME, STATE_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from .options import MemoryOptions

__all__ = [
    "KEY_PATTERN",
    "KEY_REGEX",
    "PROJECTS_DIR",
    "PROJECT_FILE",
    "REPO_ROOT_DIR",
    "Project",
    "find_repository",
    "is_key",
    "key_for",
    "normalize_remote",
    "origin_url",
    "project_for",
    "project_options",
    "project_root",
    "project_roots",
    "read_project_file",
    "record_project",
]

PROJECTS_DIR = "projects"
"""The folder of the user root holding one project root per key."""
PROJECT_FILE = "project.json"
"""What this machine knows of a project, in the project root's ``.mmd/`` (never synced)."""
REPO_ROOT_DIR = ".mm"
"""A project root committed with the project's code, at the repository's top (opt-in)."""
NAME_MAX_CHARS = 40
"""Longest name part of a key, in code points (ASCII)."""
KEY_REGEX = r"[a-z0-9](?:[a-z0-9-]{0,39})-[0-9a-f]{8}"
"""A project key, ``<name>-<8 hex>``, as a regular expression (a git sync's table of memory paths uses it too)."""
KEY_PATTERN = lazy_compile(KEY_REGEX)
"""A project key: ``<name>-<8 hex>`` (matched whole)."""
_NOT_NAME = lazy_compile(r"[^a-z0-9]+")
_SCHEME = lazy_compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP = lazy_compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.*)$")
_CONFIG_SECTION = lazy_compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_CONFIG_VALUE = lazy_compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")
_MAX_GIT_FILE_BYTES = 1 << 20
"""Longest ``.git`` file or repository ``config`` read, bytes (a larger one is no repository of ours)."""
_MAX_UP = 64
"""Most folders walked up looking for ``.git``."""


class Project:
    """One project: its key, identity, display name, remote and the folder it was found from.

    Attributes:
        key: ``<name>-<8 hex>`` (:data:`KEY_PATTERN`).
        identity: ``git:<normalized URL>`` or ``path:<real path>``.
        name: the key's name part.
        remote: the normalized origin URL, or None.
        top: the repository's main folder (or the plain folder), a real path.
        repository: whether ``top`` is a git repository.
    """

    __slots__ = ("identity", "key", "name", "remote", "repository", "top")

    def __init__(self, identity: str, name: str, top: Path, *, remote: str | None, repository: bool) -> None:
        self.identity, self.top, self.remote, self.repository = identity, top, remote, repository
        self.key = key_for(identity, name)
        self.name = self.key.rsplit("-", 1)[0]

    def __repr__(self) -> str:
        return f"Project({self.key!r}, {self.identity!r})"

    def to_json(self) -> dict[str, Any]:
        """``{key, identity, name, remote, top, repository}``."""
        return {"key": self.key, "identity": self.identity, "name": self.name, "remote": self.remote,
                "top": str(self.top), "repository": self.repository}


def is_key(value: str) -> bool:
    """Whether ``value`` is a well-formed project key."""
    return KEY_PATTERN.fullmatch(value) is not None


def key_for(identity: str, name: str) -> str:
    """``<name>-<hash>``: ``name`` lowercased, each run outside ``[a-z0-9]`` one ``-``, at most
    :data:`NAME_MAX_CHARS` characters (``project`` when empty); ``hash`` the first 8 hex digits of the
    SHA-256 of ``identity`` (UTF-8)."""
    from .sha import sha256_hex  # not hashlib: the hook before every prompt finds a project (issue 31)

    slug = _NOT_NAME.sub("-", name.lower()).strip("-")[:NAME_MAX_CHARS].strip("-") or "project"
    return f"{slug}-{sha256_hex(identity.encode('utf-8', 'surrogatepass'))[:8]}"


def normalize_remote(url: str) -> str | None:
    """The normalized form of a git remote URL (``docs/projects.md``), or None for a blank one.

    ``git@github.com:Me/API.git``, ``https://user:pw@GitHub.com/me/api/`` and
    ``ssh://git@github.com:22/me/api.git`` are all ``github.com/me/api``; a local path
    (``/srv/git/api.git``, ``file:///srv/git/api.git``) stays a path (``/srv/git/api``).
    Credentials never reach the result.
    """
    url = url.strip()
    if not url:
        return None
    if url.lower().startswith("file://"):
        path = url[7:]
    elif _SCHEME.match(url):
        rest = url.split("://", 1)[1]
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1].split(":", 1)[0]  # user info and port dropped
        path = f"{host}/{path}"
    elif (scp := _SCP.match(url)) is not None and "/" not in url.split(":", 1)[0]:
        path = f"{scp.group(1)}/{scp.group(2)}"
    else:
        path = url
    path = path.rstrip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.rstrip("/")
    return path.lower() if not path.startswith("/") else path


def _read_small(path: Path) -> str | None:
    """A small text file's content, or None when absent, unreadable, not regular or over the cap."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        import stat

        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_GIT_FILE_BYTES:
            return None
        data = os.read(fd, _MAX_GIT_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace")


def find_repository(folder: Path) -> tuple[Path, Path] | None:
    """``(main folder, common git dir)`` of the repository holding ``folder``, or None outside any.

    Walks up to the first ``.git``: a folder is the repository's git dir; a file ``gitdir: X`` (a
    worktree, a submodule) names it, and its ``commondir`` leads to the main repository's. The main
    folder of a repository whose common dir is ``<top>/.git`` is ``<top>``; otherwise (a bare common
    dir, a submodule's ``.git/modules/x``) the folder the walk found.
    """
    here = folder
    for _ in range(_MAX_UP):
        dot = here / ".git"
        gitdir: Path | None = None
        if dot.is_dir():
            gitdir = dot
        elif dot.is_file():
            text = _read_small(dot)
            if text is not None and text.startswith("gitdir:"):
                target = Path(text[7:].strip())
                gitdir = target if target.is_absolute() else here / target
        if gitdir is not None and (gitdir / "HEAD").is_file():
            common = gitdir
            pointer = _read_small(gitdir / "commondir")
            if pointer is not None and pointer.strip():
                target = Path(pointer.strip())
                common = target if target.is_absolute() else gitdir / target
            common = Path(os.path.realpath(common))
            top = common.parent if common.name == ".git" else Path(os.path.realpath(here))
            return top, common
        if here.parent == here:
            return None
        here = here.parent
    return None


def origin_url(common_dir: Path) -> str | None:
    """``remote.origin.url`` of a repository's ``config`` (the last value wins, as git reads it), or None.

    Reads git's config syntax as far as a remote's URL needs: ``[remote "origin"]`` sections (names
    case-insensitive, subsection case-sensitive), ``url = value`` lines, values in double quotes with
    ``\\"`` escapes, ``#``/``;`` comments; ``include`` directives are not followed.
    """
    text = _read_small(common_dir / "config")
    if text is None:
        return None
    in_origin, url = False, None
    for raw in text.splitlines():
        line = raw.strip()
        head = _CONFIG_SECTION.match(line)
        if head is not None:
            name, sub = head.group(1).lower(), head.group(2)
            in_origin = (name, sub) == ("remote", "origin") or (sub is None and name == "remote.origin")
            line = head.group(3).strip()
        if not in_origin or not line or line[0] in "#;":
            continue
        item = _CONFIG_VALUE.match(line)
        if item is not None and item.group(1).lower() == "url" and item.group(2):
            url = _config_value(item.group(2)) or None
    return url


def _config_value(raw: str) -> str:
    """A git config value: quoted parts unquoted (``\\"``, ``\\\\`` escapes), a comment outside quotes dropped."""
    out, quoted, i = [], False, 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            out.append(raw[i + 1])
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()


def project_for(folder: str | os.PathLike[str], home: Path | None = None, *, session: bool = False) -> Project | None:
    """The project of ``folder`` (an absolute path), or None when it is outside every project.

    In a git repository: that repository. Elsewhere: the nearest folder, ``folder`` or above, whose
    path-identity project already has a root in ``home`` (the user root); else, when ``session`` (an agent
    session ran in ``folder``), ``folder`` itself; else None.
    """
    path = Path(os.path.abspath(os.fspath(folder)))
    found = find_repository(path)
    if found is not None:
        top, common = found
        remote = origin_url(common)
        normal = normalize_remote(remote) if remote else None
        if normal:
            name = normal.rstrip("/").rsplit("/", 1)[-1]
            return Project(f"git:{normal}", name, top, remote=normal, repository=True)
        return Project(f"path:{top}", top.name, top, remote=None, repository=True)
    real = Path(os.path.realpath(path))
    if home is not None:
        here = real
        for _ in range(_MAX_UP):
            candidate = Project(f"path:{here}", here.name, here, remote=None, repository=False)
            if (home / PROJECTS_DIR / candidate.key / INDEX_NAME).is_file():
                return candidate
            if here.parent == here:
                break
            here = here.parent
    if session:
        return Project(f"path:{real}", real.name, real, remote=None, repository=False)
    return None


def project_options(base: MemoryOptions, root: Path, key: str) -> MemoryOptions:
    """The options of a project root: the user root's, with the project's root, its key as the memory id
    (so its ``mm://<key>/<topic>`` URIs differ from every other root's), and the caps its ``MEMORY.md``
    records, else mm v1's defaults (200 lines / 25600 bytes): each root has its own budgets."""
    from .options import MemoryOptions, recorded_header

    recorded = recorded_header(root)
    return MemoryOptions.create(
        root=root, env={}, memory_id=recorded.get("memory_id", key), index_lines=recorded.get("index_lines"),
        index_bytes=recorded.get("index_bytes"), detail_max_bytes=base.detail_max_bytes,
        default_write_budget=base.default_write_budget, search_mode=base.search_mode, search_limit=base.search_limit,
        max_snippet_chars=base.max_snippet_chars, nudge_enabled=base.nudge_enabled,
        nudge_interval_ms=base.nudge_interval_ms).replace(dsh_home=base.dsh_home)


def project_root(home: Path, project: Project) -> Path:
    """Where ``project``'s memory root is: ``<repo>/.mm`` when the repository has one (opt-in, committed
    with the code), else ``<home>/projects/<key>``."""
    if project.repository:
        committed = project.top / REPO_ROOT_DIR
        if (committed / INDEX_NAME).is_file():
            return committed
    return home / PROJECTS_DIR / project.key


def project_roots(home: Path) -> Iterator[tuple[str, Path]]:
    """``(key, root)`` of each project root in the home (``<home>/projects/<key>/MEMORY.md``), by key."""
    folder = home / PROJECTS_DIR
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for name in names:
        if is_key(name) and (folder / name / INDEX_NAME).is_file():
            yield name, folder / name


def read_project_file(root: Path) -> dict[str, Any]:
    """The ``project.json`` of a project root (``{}`` when absent or not a JSON object)."""
    import json

    text = _read_small(root / STATE_DIR / PROJECT_FILE)
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def record_project(root: Path, project: Project, seen_path: Path | None, now_iso: str) -> dict[str, Any]:
    """Record ``project`` (and ``seen_path``, a folder a session or command came from) in the project root's
    ``.mmd/project.json``; returns what it holds. Written atomically (0600) only when it changes.

    Raises:
        MMError(E_IO): if the file cannot be written.
    """
    import json

    from .durable import atomic_write
    from .rootfs import make_folders

    old = read_project_file(root)
    paths = [p for p in old.get("paths", []) if isinstance(p, str)]
    new_path = str(seen_path if seen_path is not None else project.top)
    if new_path not in paths:
        paths.append(new_path)
    data = {"key": project.key, "identity": project.identity, "name": project.name, "remote": project.remote,
            "paths": paths, "firstSeen": old.get("firstSeen") or now_iso,
            "lastSeen": old.get("lastSeen") or now_iso}
    if {k: v for k, v in data.items() if k != "lastSeen"} == {k: old.get(k) for k in data if k != "lastSeen"} \
            and old.get("lastSeen", "")[:10] == now_iso[:10]:
        return old
    data["lastSeen"] = now_iso
    try:
        make_folders(root / STATE_DIR)
        atomic_write(root / STATE_DIR / PROJECT_FILE, (json.dumps(data, indent=1) + "\n").encode())
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"recording the project in {root / STATE_DIR / PROJECT_FILE} failed: "
                                      f"{error.strerror or error}") from error
    return data
