"""Errors of the mm v1 core.

Budget overruns and blank write content are *values* (``{"ok": False, "code": ...,
"usage": ...}``), never exceptions, as in the reference: the caller reads the usage
and compresses. Exceptions mean a broken
state or a bad argument, and every one carries a stable code::

    Exception
     └── MMError                 code: ErrorCode, message, details
          E_INVALID              a value or identifier failed validation
          E_NOT_INITIALIZED      the memory root does not exist (open without ensure)
          E_PARSE                an on-disk file is not mm v1
          E_SNAPSHOT             a read before any snapshot was loaded
          E_IO                   a filesystem operation failed
          E_CONFLICT             a topic differs from an existing one only by case
          E_DIGEST_SOURCE        no digest source could be located or read
          E_SECRET               a write carries a secret (its kind and line named, never its value)

Codes and their meaning follow the reference's ``errors.ts`` (``E_SECRET`` is ours).
"""

from __future__ import annotations

import enum

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["BudgetCode", "ErrorCode", "MMError"]


class ErrorCode(enum.StrEnum):
    """Stable machine-readable codes of :class:`MMError` (mm v1 reference ``ErrCode``)."""

    E_INVALID = "E_INVALID"
    """A value or identifier failed validation."""
    E_NOT_INITIALIZED = "E_NOT_INITIALIZED"
    """The memory root does not exist (opened without ``ensure``)."""
    E_PARSE = "E_PARSE"
    """An on-disk file could not be parsed as mm v1."""
    E_SNAPSHOT = "E_SNAPSHOT"
    """A read was attempted before a snapshot was loaded."""
    E_IO = "E_IO"
    """A filesystem operation failed."""
    E_DIGEST_SOURCE = "E_DIGEST_SOURCE"
    """No digest source could be located or read."""
    E_CONFLICT = "E_CONFLICT"
    """A new topic differs from an existing one only by case (issue 15; one file on macOS)."""
    E_SECRET = "E_SECRET"
    """A write carries a secret (issue 29): ``details`` names the field, kind and line, never the value."""


class BudgetCode(enum.StrEnum):
    """Codes of ``ok: false`` write outcomes (returned, never raised; mm v1 §6)."""

    E_WRITE_BUDGET_EXCEEDED = "E_WRITE_BUDGET_EXCEEDED"
    """The body exceeds the per-write character budget (code points)."""
    E_FILE_BUDGET_EXCEEDED = "E_FILE_BUDGET_EXCEEDED"
    """The serialized detail file exceeds ``detailMaxBytes`` (UTF-8 bytes)."""
    E_INDEX_BUDGET_EXCEEDED = "E_INDEX_BUDGET_EXCEEDED"
    """The serialized MEMORY.md exceeds its line or byte cap."""


class MMError(Exception):
    """Raised by the mm core for broken state or bad arguments; ``code`` says which.

    Args:
        code: one of :class:`ErrorCode`.
        message: a sentence for people; the same text the reference uses where one exists.
        details: optional JSON-able payload (a path, the offending value).
    """

    def __init__(self, code: ErrorCode, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"MMError({self.code.value!r}, {self.message!r})"

    def to_json(self) -> dict[str, Any]:
        """The error as ``{name, code, message, details?}`` (the vectors' error shape)."""
        out: dict[str, Any] = {"name": "MemoryError", "code": self.code.value, "message": self.message}
        if self.details is not None:
            out["details"] = self.details
        return out
