"""Shared test fixtures: paths to ../shared and helpers that skip visibly without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or a visible skip when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared test material is not beside this checkout")
    return path


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """An environment with DSH_HOME in tmp_path and no DSH_MEMORY_ROOT."""
    monkeypatch.delenv("DSH_MEMORY_ROOT", raising=False)
    home = tmp_path / "dsh-home"
    home.mkdir()
    monkeypatch.setenv("DSH_HOME", str(home))
    return dict(os.environ)
