"""The conformance runner's two building blocks: a deviation rule, and the structural comparison of results.

``tests/conformance_rules.py`` and ``tests/conformance_kinds.py`` build their rules from these.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Deviation:
    """A rule saying where we deliberately differ from the reference, and why.

    ``explains(case, op, got, want)`` is True when the difference between our
    result and the vector's is exactly this deviation. ``proof`` names the
    test (``module::function``) that pins our behaviour instead. A deviation
    after which the session holds something else than the reference's also
    has ``as_reference(case, session, op)``: what the reference did, done on a
    model session (the op's result, or MMError raised); the runner compares
    what follows with that model (``tests/conformance_kinds.py``).
    """

    name: str
    reason: str
    proof: str
    explains: Callable[[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]], bool]
    as_reference: Callable[[dict[str, Any], Any, dict[str, Any]], Any] | None = None


def same(actual: Any, expected: Any, float_tol: bool) -> bool:
    """Structural equality; floats within 1e-9 relative when ``float_tol``; NaN equals null."""
    if isinstance(actual, float) and math.isnan(actual):
        actual = None
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and actual.keys() == expected.keys()
                and all(same(actual[k], expected[k], float_tol) for k in expected))
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(actual) == len(expected)
                and all(same(a, e, float_tol) for a, e in zip(actual, expected, strict=True)))
    if float_tol and isinstance(expected, float) and isinstance(actual, int | float) and not isinstance(actual, bool):
        return math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected
    return bool(actual == expected)
