"""Candidate identity: the keys the review queue and the notes are matched by.

Owns: :func:`candidate_key` (a candidate across the queue's whole history:
kind, topic and whitespace-normalized body, never its seq or file, so a log
read again never brings a candidate back and a rejected one never returns)
and :func:`body_key` (a candidate against existing notes).

Never: touches a database or a file.
"""

from __future__ import annotations

import hashlib

__all__ = ["body_key", "candidate_key"]


def _normalize(body: str) -> str:
    """Whitespace runs to one space, trimmed: re-wrapped text keeps its identity."""
    return " ".join(body.split())


def body_key(body: str) -> str:
    """sha256 (hex) of the normalized body: matches a candidate against existing notes."""
    return hashlib.sha256(_normalize(body).encode("utf-8", "replace")).hexdigest()


def candidate_key(kind: str, topic: str, body: str) -> str:
    """A candidate's identity across the queue's history: sha256 (hex) of kind, topic and normalized body."""
    data = "\0".join((kind, topic, _normalize(body))).encode("utf-8", "replace")
    return hashlib.sha256(data).hexdigest()
