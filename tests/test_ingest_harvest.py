"""mmd.daemon.ingest.harvest and .health: slices into the queue by opaque cursor; old state.db rows keep working."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from mmd.daemon.ingest import IngestHealth
from mmd.daemon.ingest.harvest import AddedBatch, Harvester, TrackedLog
from mmd.daemon.queue import ReviewQueue
from mmd.daemon.statedb import CursorRow, StateDB
from mmd.sources import SOURCES
from mmd.sources.dsh.session import read_session
from mmd.sources.other import read_other_log
from tests.test_ingest_helpers import user_message

DECOYS = Path(__file__).parent / "fixtures" / "sessions" / "--home-test-decoys--" \
    / "session-decoys" / "session.v4.jsonl"


def harvester(tmp_path: Path, added: list[AddedBatch]) -> Harvester:
    db = StateDB(tmp_path / "root")
    db.open()
    queue = ReviewQueue(db, lambda: "2026-11-30T00:00:00.000Z")
    return Harvester(queue, notes=lambda: None, write_budget=lambda: 4000, health=IngestHealth("/s"),
                     on_added=added.append, stop=threading.Event())


def test_the_status_json_keeps_its_shape() -> None:
    assert IngestHealth("/s").to_json() == {
        "running": False, "phase": "stopped", "mode": "native", "watchError": None, "sessionsDir": "/s",
        "folderPresent": False, "filesTracked": 0,
        "bytesRead": 0, "candidatesAdded": 0, "lastEventAt": None, "errors": 0, "lastError": None, "warnings": 0,
        "sessionsEnded": 0, "backfill": {"done": False, "files": 0, "bytes": 0, "candidates": 0, "seconds": None},
        "sources": []}


def test_a_log_goes_to_the_queue_with_its_cursor_row_and_is_not_read_twice(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl"
    shutil.copyfile(DECOYS, path)  # decoys, and (appended) a prompt marked on purpose
    with path.open("ab") as log:
        log.write(user_message(90, "REMEMBER: the decoy audit runs weekly.", "m-90"))
    added: list[AddedBatch] = []
    h = harvester(tmp_path, added)
    t = TrackedLog(str(path), SOURCES["dsh"], None, None)
    assert h.read(t) == path.stat().st_size
    ids = [i for batch in added for i in batch.ids]
    assert ids and h.health.candidates_added == len(ids) and h.health.bytes_read == path.stat().st_size
    row = h.queue.db.cursors()[str(path)]
    assert (row.kind, row.session_id) == ("dsh", t.session_id) and row.cursor == read_session(path).cursor.to_json()
    # a restart: the stored row, handed back as it is, reads nothing again
    again = TrackedLog(str(path), SOURCES["dsh"], row.session_id, row.cursor)
    assert h.read(again) == 0 and len(added) == 1


def test_old_rows_of_a_dsh_named_file_read_as_other_keep_their_place(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text('{"type":"note","text":"MEMO: not a DSH header"}\n', encoding="utf-8")
    added: list[AddedBatch] = []
    h = harvester(tmp_path, added)
    old = read_other_log(path).cursor.to_json()  # what the daemon before the sources stored, under kind "other"
    h.queue.db.put_cursor(CursorRow(str(path), "other", None, old), "2026-11-30T00:00:00.000Z")
    row = h.queue.db.cursors()[str(path)]
    t = TrackedLog(str(path), SOURCES["dsh"], row.session_id, row.cursor)
    assert h.read(t) == 0 and added == [] and h.queue.refresh_counts()["total"] == 0


def test_the_log_names_the_ids_added_not_their_count() -> None:
    from mmd.daemon.ingest.harvest import _ids

    assert (_ids([4, 5, 6]), _ids([7]), _ids([1, 3])) == ("4-6", "7", "1,3")
    assert _ids(list(range(0, 40, 2))) == "0,2,4,6,8,10,12,14,16,18,…"
