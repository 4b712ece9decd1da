"""Candidate memories from utterances: the pure middle floor shared by the daemon and ``mmctl digest``.

Owns: the candidate shape the review queue stores (:mod:`.model`), the mm v1
marker rules with names and weights (:mod:`.rules`; the marker words
themselves are written once, in :mod:`mmd.core.digest`), candidate identity
(:mod:`.identity`), dropping what the caller has already seen
(:mod:`.dedupe`), the noise cues that lower a draft (:mod:`.noise`), where
a candidate proposes to go (:mod:`.topics`) and the pipeline from
utterances to candidates (:mod:`.pipeline`).

Arrows: ``mmd.candidates`` → the standard library, :mod:`mmd.core` and
:mod:`mmd.sources.base` only, so ``mmctl`` may import it. Never: reads logs
(the sources do), stores anything (the daemon's queue does), or imports
``mmd.daemon``.
"""

from __future__ import annotations

from .dedupe import Seen, fresh
from .identity import body_key, candidate_key
from .model import Evidence, NewCandidate
from .pipeline import candidates_from, make_candidate, marks_from, proposed_topic
from .rules import MM_V1, Rule, may_hold_candidates

__all__ = ["MM_V1", "Evidence", "NewCandidate", "Rule", "Seen", "body_key", "candidate_key", "candidates_from",
           "fresh", "make_candidate", "marks_from", "may_hold_candidates", "proposed_topic"]
