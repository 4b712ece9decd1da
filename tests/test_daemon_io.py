"""The daemon's event loop never waits on a disk: no coroutine of ``mmd.daemon`` calls a blocking file function.

File I/O a coroutine needs goes through aiofiles (``aiofiles.os.wrap``, ``aiofiles.open``) or a worker thread
(``asyncio.to_thread``); read from the syntax trees.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .conftest import REPO

BLOCKING = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "atomic_write", "save_due", "load_due",
            "write_block", "read_index_bytes", "fsync", "unlink", "rmtree", "copyfile", "replace_file"}
"""Names of functions and methods that read, write or remove a file in the calling thread."""


def _blocking_calls(path: Path, base: Path = REPO) -> list[str]:
    found = []
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(fn, ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                awaited_wrapper = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "aiofiles"
                if name in BLOCKING and not awaited_wrapper:
                    found.append(f"{path.relative_to(base)}:{node.lineno}: {fn.name} calls {name}()")
    return found


def test_no_coroutine_of_the_daemon_calls_a_blocking_file_function() -> None:
    found = [f for path in sorted((REPO / "mmd" / "daemon").rglob("*.py")) for f in _blocking_calls(path)]
    assert not found, "await it through aiofiles (aiofiles.os.wrap) or asyncio.to_thread:\n" + "\n".join(found)


def test_the_check_sees_a_blocking_call_in_a_coroutine(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("async def f(p):\n    p.write_text('x')\n    async with aiofiles.open(p) as f:\n        pass\n"
                      "def g(p):\n    p.read_text()\n")
    assert _blocking_calls(sample, tmp_path) == ["sample.py:2: f calls write_text()"]
