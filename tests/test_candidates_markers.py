"""Every spec marker visible (issue 30): each mm v1 §9 marker line of a DSH log — ``Summary:``,
``Conclusion:``, ``总结：``, ``结论：``, ``mm:`` / ``mm://``, ``MEMO:``, ``REMEMBER``, ``记忆：``, ``记住：`` — is a
visible candidate of the queue, said by the person or by the agent, in a bold label, mid-line after a sentence,
or without its colon.

A held-back-style DSH session written for this test (``tests/fixtures/dsh-markers``), read by the DSH source through
the harvester into a real SQLite queue.
"""

from __future__ import annotations

import threading
from pathlib import Path

from mmd.daemon.ingest import IngestHealth
from mmd.daemon.ingest.harvest import Harvester, TrackedLog
from mmd.daemon.queue import ReviewQueue
from mmd.daemon.statedb import StateDB
from mmd.sources import SOURCES

SESSION = next((Path(__file__).parent / "fixtures" / "dsh-markers").rglob("session.v4.jsonl"))

MARKED = {  # the body each marker line must give, by marker
    "mm://": "Journal line ids are derived from the posting date and the account, never random.",
    "REMEMBER:": "run the ledger tests with `make test-ledger`; plain `pytest` needs the bank sandbox.",
    "MEMO:": "`post_lines()` lives in `ledger/posting.py`; reuse it for reversals too.",
    "**Conclusion:**": "the duplicate lines come from random line ids, not from the scheduler.",
    "记住：": "所有金额字段都用整数分 `amount_minor`，不要用 float。",
    "REMEMBER": "the bank sandbox key rotates every Monday.",
    "结论：": "重复的分录来自随机生成的行编号，改为由记账日期和科目派生后问题消失。",
    "记忆：": "关账任务重试时必须复用同一批行编号。",
    "mm:": "the close job runs at 02:00 UTC on the first business day, never on weekends.",
    "Summary:": "journal line ids are now deterministic, so a retried monthly close posts nothing twice.",
    "总结：": "行编号确定之后，关账重试是幂等的；回归测试覆盖了两次重试。",
}


def test_every_marker_line_of_a_dsh_log_is_a_visible_candidate(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "root")
    db.open()
    queue = ReviewQueue(db, lambda: "2026-12-01T00:00:00.000Z")
    h = Harvester(queue, notes=lambda: None, write_budget=lambda: 4000, health=IngestHealth("/s"),
                  on_added=lambda batch: None, stop=threading.Event())
    h.read(TrackedLog(str(SESSION), SOURCES["dsh"], None, None))
    visible = {c["body"]: c for c in queue.list("pending", limit=1000, offset=0, hidden=False)[0]}
    missing = {marker: body for marker, body in MARKED.items() if body not in visible}
    assert not missing, f"marker lines not visible: {missing}; visible: {sorted(visible)}"
    pinned = {marker for marker, body in MARKED.items() if visible[body]["pinned"]}
    # summaries are ranked; the agent's own marked lines (MEMO:, 记忆： in its replies) are visible, never pinned as
    # the person's words (issue 29)
    assert pinned == {"mm://", "REMEMBER:", "记住：", "REMEMBER", "mm:"}
    assert {visible[MARKED[m]]["speaker"] for m in ("MEMO:", "记忆：")} == {"agent"}
    assert {c["source"]["sessionId"] for c in visible.values()} == {"session-7c2e9b14-3d5a-4f8e-9a17-6b0c2d4e8f31"}
