"""A score is filtered as it is shown (``mmd.wire.scores``): ``queue reject --below 0.6`` leaves a candidate listed as
``0.60`` (0.596), ``--min-score 0.6`` lists it, on a real ``state.db``; and a score that is no finite number is refused
at the CLI and on the wire, never reaching SQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmd.candidates import candidates_from
from mmd.daemon.queue import ReviewQueue
from mmd.daemon.statedb import StateDB
from mmd.wire.methods import check_params
from mmd.wire.protocol import DaemonError, FrameError, parse_request
from mmd.wire.scores import score_text, shown_at_least
from tests.test_candidates_screening import _said


@pytest.mark.parametrize("threshold", [round(0.01 * i, 2) for i in range(0, 201)] + [0.555, 0.705, 1e-9])
def test_the_least_score_shown_at_a_threshold_splits_the_stored_scores_where_the_display_does(
        threshold: float) -> None:
    least = shown_at_least(threshold)
    assert float(score_text(least)) >= threshold
    below = round(least - 0.0001, 4)  # the stored score just under it (scores are stored to four decimals)
    assert float(score_text(below)) < threshold or below < 0


def test_a_candidate_shown_as_the_threshold_is_not_below_it(tmp_path: Path) -> None:
    (db := StateDB(tmp_path)).open()
    queue = ReviewQueue(db, lambda: "2026-12-02T00:00:00.000Z")
    said = [_said("human", f"mm: rule number {n} of the house holds", n) for n in range(4)]
    ids = queue.add(candidates_from(said, write_budget=4000))
    assert len(ids) == 4
    scores = dict(zip(ids, (0.596, 0.5949, 0.605, 0.595), strict=True))  # 0.595 is stored as a double under it
    for cid, score in scores.items():
        db.conn().execute("UPDATE candidates SET score = ? WHERE id = ?", (score, cid))
    shown = {cid: score_text(s) for cid, s in scores.items()}
    assert list(shown.values()) == ["0.60", "0.59", "0.60", "0.59"]
    assert queue.below(0.6) == [cid for cid in ids if shown[cid] == "0.59"]
    page, _ = queue.list(hidden=True, min_score=0.6)
    assert sorted(c["id"] for c in page) == [cid for cid in ids if shown[cid] == "0.60"]


def test_a_score_that_is_no_finite_number_is_refused_on_the_wire() -> None:
    for constant in ("NaN", "Infinity", "-Infinity"):
        frame = b'{"jsonrpc": "2.0", "id": 1, "method": "queue.reject", "params": {"below": %b}}' % constant.encode()
        with pytest.raises(FrameError, match="not valid JSON"):
            parse_request(frame)
    _, method, params, _ = parse_request(b'{"jsonrpc": "2.0", "id": 1, "method": "queue.reject", '
                                         b'"params": {"below": 1e400}}')
    with pytest.raises(DaemonError, match="below is out of range"):
        check_params(method, params)
    assert check_params(method, json.loads('{"below": 0.6}')) == {"below": 0.6}
