"""mmd.sources.dsh.extract: exactly the model-visible text of a DSH log, once, across reads.

Guards dsh-session-format.md §3 (headers, inherited prefix), §4 (envelopes,
packed chunk rows), §5–§6 (which events and source kinds are model-visible)
and §7 (one record per compaction). Every decoy — reasoning, tool output,
injected context, system prompt, streams, inbox copies, the inherited prefix —
must produce nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import zstandard

import mmd.sources.dsh.extract as extract_mod
from mmd.sources.dsh.extract import RecordKind, SessionExtractor, TextRecord
from mmd.sources.dsh.session import SessionCursor, read_session
from mmd.sources.logio.decode import LogCursor
from mmd.sources.other import read_other_log

from .conftest import needs_samples, shared_path

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"

U, A, C = RecordKind.USER, RecordKind.ASSISTANT, RecordKind.COMPACTION

INFRA = "--Users-mei-src-infra--/session-5a1e8c3d-7b20-4c9e-a6f1-0d8b3e2c9f57/session.jsonl"
PREVIEW = "--dsh-workspace--/preview-architecture-review/session.v3.jsonl"
PAYMENTS = "--home-dev-work-payments-api--/session-3f9c2a71-5b8e-4d0a-9c61-2e7f4b8d1a05/session.v4.jsonl"
LEGACY = "_no-cwd/legacy-sdk-history/session.v4.jsonl"

# (seq, kind, message id, first 80 characters of the text)
REAL_RECORDS: dict[str, list[tuple[int, RecordKind, str, str]]] = {
    INFRA: [
        (2, U, "88f8d1f7-3a52-5ecf-a906-0b7166e763eb",
         "Why does `terraform plan` in envs/prod want to destroy and recreate the RDS inst"),
        (22, A, "68128275-53a1-5530-8efe-85b3df89e200", "Let me look at what the plan says about the DB instance."),
        (45, A, "d89619a6-4139-515c-ad0f-a13a25728f09",
         "## Why RDS is replaced\nThe module input `engine_version` moved from 15.4 to 15.7"),
        (50, U, "d4fe1863-9a92-5892-aec2-968f9162883e",
         "OK, pin it.\n记住：prod 的任何 apply 都要先在 staging 跑一遍。"),
        (52, C, "0d4e1b7a-93c2-4f6d-8e15-2a7c9b3f6e80",
         "## Primary Request and Intent\n- Explain why `terraform plan` in envs/prod recrea"),
        (78, A, "e1be1f49-e66e-5480-b9a4-9049bf278dd4",
         'Pinned `engine_version = "15.4"` in `envs/prod/main.tf`; `terraform plan` should'),
    ],
    PREVIEW: [
        (171, U, "preview-review-user", "Review whether the preview fixture is isolated from future WebFS data."),
        (174, A, "preview-review-assistant",
         "The bundled fixture is static image content; future WebFS state remains user-own"),
    ],
    PAYMENTS: [
        (8, U, "86f57b13-6b29-5878-9754-b7835e8c8dac",
         "The refund endpoint double-charges when the client retries. Can you find out why"),
        (15, A, "de003afd-d8a2-5b8f-b96d-37430a326c68", "I'll start by reading the refund service and the flaky test."),
        (22, A, "8c7716f7-04ef-50d2-807e-1f48bbf83f74",
         "`create_refund` mints a fresh `uuid4()` key on every call, so the client's retry"),
        (27, A, "fe2c2844-812c-5791-a3d6-eba3715dbecf", "Fixing the key derivation and tracking the remaining steps."),
        (40, A, "ea9bf126-44ff-5661-bbf2-c6d868c30524",
         "## Root cause\nThe retry path generated a fresh `uuid4()` idempotency key on ever"),
        (47, U, "7d3e8eb3-a6bb-54fa-a3c5-53263b39b3ed",
         "Great. 记住：以后所有涉及金额的字段都用 `amount_minor`（整数分），不要用 float。\nAlso add a regression tes"),
        (48, A, "24a83615-4110-516c-9392-42903df7c0ce",
         "Adding the capture regression test next to the existing ones."),
        (58, A, "99b52191-4d84-5e68-b63a-1c5f2908a627",
         "Added `test_capture_retry_reuses_key` in `tests/test_captures.py`; capture and r"),
        (65, U, "25242c4f-ae70-5d0d-8b7d-33e4fea5109b",
         "Now write the CHANGELOG entry and summarize what we changed today.\nmm: changelog"),
        (67, C, "c6b1d0e4-2f7a-4e59-8a13-5d9c0b7e2a41",
         "## Primary Request and Intent\n- Fix flaky `test_refund_is_idempotent` (double re"),
        (80, A, "4d2f83f4-046b-51e9-b0e9-580c909cc845",
         "## Today's changes\n1. Deterministic idempotency keys for refunds (`derive_key`)."),
    ],
    LEGACY: [],
}
REAL_IDS = {INFRA: "session-5a1e8c3d-7b20-4c9e-a6f1-0d8b3e2c9f57", PREVIEW: "preview-architecture-review",
            PAYMENTS: "session-3f9c2a71-5b8e-4d0a-9c61-2e7f4b8d1a05", LEGACY: "legacy-sdk-history"}
REAL_LAST_SEQ = {INFRA: 80, PREVIEW: 176, PAYMENTS: 82, LEGACY: 5}
# Text that appears only in decoys of the real samples: none may reach a record.
REAL_DECOYS = [
    "Engine version drift", "Instructions from", "You are DSH", "must be replaced", "has been updated",
    "History checkpoint", "Checkpoint 01 is recorded", "Current runtime context", "REMEMBER: never log full card",
    "dsh-memory-delta", "MEMO: suspect", "FAILED tests/", "20 passed in 3.87s", "Updated todo list",
    "ALICE_ONLY_SECRET",
    "The innkeeper nods", "automatically generated checkpoint", "<compacted-summary>", "Stripe sandbox quota",
]

V0 = "--home-test-legacy--/session-v0-legacy/session.jsonl"
V2 = "--home-test-fork--/fork-of-fork/session.v2.jsonl"
V4 = "--home-test-decoys--/session-decoys/session.v4.jsonl"
FIXTURE_RECORDS: dict[str, list[TextRecord]] = {
    V0: [
        TextRecord("session-v0-legacy", 5, U, "Child prompt: list the cron jobs.", "m-5"),
        TextRecord("session-v0-legacy", 19, A, "Cron jobs live in /etc/cron.d.", "m-19"),
        TextRecord("session-v0-legacy", 22, U, "Steer: also check systemd timers.",
                   "legacy-message:session-v0-legacy:22"),
        TextRecord("session-v0-legacy", 23, A, "Timers: none found.", "legacy-message:session-v0-legacy:23"),
        TextRecord("session-v0-legacy", 25, C, "## Primary Request and Intent\n- Audit scheduled jobs.", "cmp-1"),
    ],
    V2: [
        TextRecord("fork-of-fork", 12, U, "Own prompt: summarize the parent's plan.", "o-12"),
        TextRecord("fork-of-fork", 13, A, "Own answer: the plan has two steps.", "o-13"),
    ],
    V4: [
        TextRecord("session-decoys", 8, U, "Human prompt with two blocks.\n\nSecond block.", "m-8"),
        TextRecord("session-decoys", 10, A, "Visible answer.", "m-10"),
        TextRecord("session-decoys", 16, U, "Spaced JSON prompt.", "m-16"),
        TextRecord("session-decoys", 17, U, "Data-first prompt.", "m-17"),
        TextRecord("session-decoys", 18, A, "Long answer: " + "y" * 5000, "m-18"),
        TextRecord("session-decoys", 22, C, "## Primary Request and Intent\n- Decoy audit.", "cmp-v4"),
    ],
}
FIXTURE_LAST_SEQ = {V0: 33, V2: 15, V4: 25}


@pytest.fixture()
def real(tmp_path: Path) -> Path:
    src = shared_path("sessions")
    dst = tmp_path / "sessions"
    shutil.copytree(src, dst)
    for path in dst.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dst


@pytest.fixture()
def fixtures(tmp_path: Path) -> Path:
    dst = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, dst)
    return dst


def summary(records: list[TextRecord]) -> list[tuple[int, RecordKind, str | None, str]]:
    return [(r.seq, r.kind, r.message_id, r.text[:80]) for r in records]


def to_zstd(plain: bytes, batch_lines: int = 3) -> bytes:
    """One frame for the header line, then one frame per batch of lines, as DSH writes (§2)."""
    rows = plain.splitlines(keepends=True)
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    frames = [rows[0]] + [b"".join(rows[i:i + batch_lines]) for i in range(1, len(rows), batch_lines)]
    return b"".join(cctx.compress(f) for f in frames)


def read_in_pieces(path: Path, data: bytes, cuts: list[int]) -> tuple[list[TextRecord], SessionCursor]:
    """Write ``data`` to ``path`` growing through ``cuts``, reading after each step via a JSON round trip."""
    path.write_bytes(b"")
    cursor: SessionCursor | None = None
    out: list[TextRecord] = []
    for cut in [*cuts, len(data)]:
        with open(path, "ab") as f:
            f.write(data[path.stat().st_size:cut])
        result = read_session(path, cursor)
        assert result.restarted == ""
        out += result.records
        cursor = SessionCursor.from_json(json.loads(json.dumps(result.cursor.to_json())))
    assert cursor is not None
    return out, cursor


# ---- the real samples ------------------------------------------------------------------------------------


@needs_samples
@pytest.mark.parametrize("rel", [INFRA, PREVIEW, PAYMENTS, LEGACY])
def test_real_sample_yields_exactly_its_model_visible_text(real: Path, rel: str) -> None:
    result = read_session(real / rel)
    assert summary(result.records) == REAL_RECORDS[rel]
    assert {r.session_id for r in result.records} <= {REAL_IDS[rel]}
    assert result.header is not None and result.header.session_id == REAL_IDS[rel]
    assert result.cursor.last_seq == REAL_LAST_SEQ[rel]
    assert result.warnings == [] and not result.turn_open
    for record in result.records:
        for decoy in REAL_DECOYS:
            assert decoy not in record.text, (record.seq, decoy)


@needs_samples
def test_real_compaction_is_emitted_once_and_matches_its_checkpoint(real: Path) -> None:
    lines = (real / PAYMENTS).read_bytes().splitlines(keepends=True)
    summary_line = next(i for i, line in enumerate(lines) if b'"type":"compaction/summary"' in line)
    full = [r for r in read_session(real / PAYMENTS).records if r.kind is C]
    without_summary = real / "no-summary.v4.jsonl"
    without_summary.write_bytes(b"".join(lines[:summary_line] + lines[summary_line + 1:]))
    fallback = [r for r in read_session(without_summary).records if r.kind is C]
    assert len(full) == 1 and len(fallback) == 1
    assert fallback[0].text == full[0].text  # checkpoint wrapper stripped to the same summary
    assert (full[0].seq, fallback[0].seq) == (67, 68)
    assert full[0].text.startswith("## Primary Request and Intent") and full[0].text.endswith("float for money.")


@needs_samples
@pytest.mark.parametrize("rel", [INFRA, PREVIEW, PAYMENTS])
def test_real_sample_read_line_by_line_gives_the_same_records_once(real: Path, rel: str) -> None:
    data = (real / rel).read_bytes()
    full = read_session(real / rel).records
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    cuts = sorted({e - 1 for e in ends} | set(ends[::3]))  # torn tails one byte short of each newline
    pieces, cursor = read_in_pieces(real / "growing.jsonl", data, cuts)
    assert pieces == full
    assert cursor.last_seq == REAL_LAST_SEQ[rel]


@needs_samples
@pytest.mark.parametrize("rel", [INFRA, PREVIEW, PAYMENTS, LEGACY])
def test_real_sample_as_zstd_frames_gives_identical_records(real: Path, rel: str) -> None:
    plain = (real / rel).read_bytes()
    packed = real / (Path(rel).name + ".zstd")
    packed.write_bytes(to_zstd(plain))
    result = read_session(packed)
    assert result.records == read_session(real / rel).records
    assert result.cursor.log.compressed and result.cursor.log.offset == packed.stat().st_size


@needs_samples
def test_real_zstd_with_truncated_last_frame_gives_the_prefix(real: Path) -> None:
    plain = (real / PAYMENTS).read_bytes()
    rows = plain.splitlines(keepends=True)
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    head, body, last = rows[0], b"".join(rows[1:60]), b"".join(rows[60:])
    packed = real / "session.v4.jsonl.zstd"
    whole_last = cctx.compress(last)
    packed.write_bytes(cctx.compress(head) + cctx.compress(body) + whole_last[: len(whole_last) // 2])
    first = read_session(packed)
    expected = read_session(real / PAYMENTS).records
    assert first.records == [r for r in expected if r.seq <= 58]  # line 60 holds seq 58
    with open(packed, "ab") as f:
        f.write(whole_last[len(whole_last) // 2:])
    rest = read_session(packed, first.cursor)
    assert first.records + rest.records == expected and rest.restarted == ""


# ---- own fixtures ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", [V0, V2, V4])
def test_fixture_yields_exactly_its_records(fixtures: Path, rel: str) -> None:
    result = read_session(fixtures / rel)
    assert result.records == FIXTURE_RECORDS[rel]
    assert result.cursor.last_seq == FIXTURE_LAST_SEQ[rel]
    text = (fixtures / rel).read_text(encoding="utf-8")
    assert all("DECOY" not in r.text and "INHERITED" not in r.text and "PARENT" not in r.text
               for r in result.records)
    assert "DECOY" in text  # the decoys really are in the file


def test_v0_packed_chunk_rows_count_for_seq_but_never_produce_text(fixtures: Path) -> None:
    path = fixtures / V0
    lines = path.read_bytes().splitlines(keepends=True)
    upto_tool_chunks = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"tool-call-chunks"'))
    cut = path.parent / "cut.jsonl"
    cut.write_bytes(b"".join(lines[: upto_tool_chunks + 1]))
    partial = read_session(cut)
    assert partial.cursor.last_seq == 18  # seq0 17 + two args
    assert partial.records == FIXTURE_RECORDS[V0][:1]
    full = read_session(path)
    assert full.cursor.last_seq == 33 and full.turn_open  # trailing text-chunks 31..33, turn 3 still open
    assert full.header is not None and full.header.seed_length == 4


def test_v0_seed_length_skips_the_inherited_events(fixtures: Path) -> None:
    path = fixtures / V0
    text = path.read_text(encoding="utf-8").replace('"seedLength":4,', "", 1)
    unseeded = path.parent / "unseeded.jsonl"
    unseeded.write_text(text, encoding="utf-8")
    records = read_session(unseeded).records
    assert [r.text for r in records[:2]] == ["INHERITED parent prompt", "INHERITED parent answer"]
    assert records[2:] == FIXTURE_RECORDS[V0]


def test_seeded_prefix_ends_at_the_last_inherited_end_seed(fixtures: Path) -> None:
    path = fixtures / V2
    data = path.read_bytes()
    records, cursor = read_in_pieces(path.parent / "grow.v2.jsonl", data, [])
    assert records == FIXTURE_RECORDS[V2]
    assert cursor.state.seed_resolved and cursor.state.seed_cut_seq == 9
    unseeded = path.parent / "unseeded.v2.jsonl"
    unseeded.write_bytes(data.replace(b'"isSeeded":true', b'"isSeeded":false', 1))
    assert [r.text for r in read_session(unseeded).records][:2] == ["GRANDPARENT prompt", "GRANDPARENT answer"]


def test_resume_continues_after_the_settled_seed_prefix(fixtures: Path) -> None:
    path = fixtures / V2
    rows = path.read_bytes().splitlines(keepends=True)
    grow = path.parent / "grow.v2.jsonl"
    grow.write_bytes(b"".join(rows[:14]))  # up to the own prompt (seq 12)
    first = read_session(grow)
    assert [r.seq for r in first.records] == [12]
    with open(grow, "ab") as f:
        f.write(b"".join(rows[14:]))
    second = read_session(grow, first.cursor)
    assert [r.seq for r in second.records] == [13]


@pytest.mark.parametrize("split", range(1, 5))
def test_compaction_summary_and_checkpoint_in_separate_reads_give_one_record(fixtures: Path, split: int) -> None:
    path = fixtures / V0
    data = path.read_bytes()
    at = data.index(b'"type":"compact/summary"') + split * 40
    records, _ = read_in_pieces(path.parent / "grow.jsonl", data, [at, data.index(b"compact/end")])
    assert [r for r in records if r.kind is C] == FIXTURE_RECORDS[V0][-1:]
    assert records == FIXTURE_RECORDS[V0]


def test_fixture_as_zstd_with_torn_frames_gives_the_same_records(fixtures: Path) -> None:
    for rel in (V0, V2, V4):
        plain = (fixtures / rel).read_bytes()
        packed_bytes = to_zstd(plain, batch_lines=2)
        cuts = list(range(7, len(packed_bytes), 97))
        if rel == V2:  # a seeded log appears with its whole prefix (atomic first publish): cut after it
            prefix = plain[: plain.index(b"\n", plain.index(b'"seq":10,')) + 1]
            cuts = [c for c in cuts if c > len(to_zstd(prefix, batch_lines=2))]
        target = fixtures / (rel + ".zstd")
        records, cursor = read_in_pieces(target, packed_bytes, cuts)
        assert records == FIXTURE_RECORDS[rel], rel
        assert cursor.log.offset == len(packed_bytes)


def test_seeded_log_caught_before_its_marker_leaks_nothing(fixtures: Path) -> None:
    data = (fixtures / V2).read_bytes()
    first_marker = data.index(b'{"type":"session/end-seed"')
    ends = [i + 1 for i in range(first_marker) if data[i] == 0x0A]
    records, cursor = read_in_pieces(fixtures / "grow.v2.jsonl", data, ends)
    assert records == FIXTURE_RECORDS[V2]
    assert cursor.state.seed_cut_seq == 9


def test_log_caught_between_two_inherited_markers_reports_the_late_one(fixtures: Path) -> None:
    data = (fixtures / V2).read_bytes()
    second_marker = data.index(b'{"type":"session/end-seed"', data.index(b'"seq":5,'))
    grow = fixtures / "grow.v2.jsonl"
    grow.write_bytes(data[:second_marker])
    first = read_session(grow)
    assert [r.text for r in first.records] == ["PARENT prompt", "PARENT answer"]  # caught between two markers
    grow.write_bytes(data)
    second = read_session(grow, first.cursor)
    assert second.records == FIXTURE_RECORDS[V2]
    assert any("after the prefix was settled" in w for w in second.warnings)


def test_restart_after_shrink_reads_again_from_zero_with_fresh_state(fixtures: Path) -> None:
    path = fixtures / V0
    first = read_session(path)
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b'{"type":"steering/message"')])
    again = read_session(path, first.cursor)
    assert again.restarted == "shrunk"
    assert again.records == FIXTURE_RECORDS[V0][:2]
    assert again.cursor.last_seq == 21 and again.cursor.state.compaction_keys == []


def test_bad_header_or_garbage_gives_warnings_and_no_records(tmp_path: Path) -> None:
    garbage = tmp_path / "session.jsonl"
    garbage.write_bytes(bytes(range(256)) * 4000 + b"\n" + b'{"type":"user/message"}\n')
    result = read_session(garbage)
    assert result.records == [] and result.header is None
    assert any("not a DSH session header" in w for w in result.warnings)
    nojson = tmp_path / "session.v4.jsonl"
    nojson.write_bytes(b'{"type":"note","id":"x"}\n{"type":"user/message","seq":0}\n')
    assert read_session(nojson).records == [] and read_session(nojson).cursor.state.invalid


def test_big_log_with_a_huge_line_still_yields_the_records_after_it(tmp_path: Path) -> None:
    log = tmp_path / "session.v4.jsonl"
    user = {"type": "user/message", "seq": 1, "time": 1,
            "data": {"content": [{"type": "text", "text": "after the blob"}], "source": {"kind": "user"}, "id": "u"}}
    with open(log, "wb") as f:
        f.write(b'{"type":"session","version":4,"id":"big","isSeeded":false}\n')
        f.write(b'{"type":"tool/result","seq":0,"data":{"x":"' + b"z" * (20 * 1024 * 1024) + b'"}}\n')
        f.write(json.dumps(user).encode() + b"\n")
    result = read_session(log)
    assert [(r.seq, r.text) for r in result.records] == [(1, "after the blob")]
    assert any("longer than" in w for w in result.warnings)


def test_lines_that_cannot_produce_records_are_never_json_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "session.v4.jsonl"
    big = "x" * 50_000
    rows = ['{"type":"session","version":4,"id":"s","isSeeded":false}']
    for seq in range(0, 400, 2):
        rows.append(json.dumps({"type": "tool/result", "seq": seq, "time": 1, "data": {"out": big}},
                               separators=(",", ":")))
        rows.append(json.dumps({"data": {"out": big}, "type": "assistant/attempt", "seq": seq + 1, "time": 1},
                               separators=(",", ":")))
    rows.append(json.dumps({"type": "user/message", "seq": 400, "time": 1,
                            "data": {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}}))
    log.write_text("\n".join(rows) + "\n", encoding="utf-8")
    calls: list[int] = []
    real_loads = json.loads
    monkeypatch.setattr(extract_mod.json, "loads", lambda s, *a, **k: calls.append(len(s)) or real_loads(s, *a, **k))
    result = read_session(log)
    assert [r.text for r in result.records] == ["hi"] and result.cursor.last_seq == 400
    assert len(calls) == 2  # the header and the one user message


def test_extractor_state_survives_json_and_lone_surrogates_are_replaced() -> None:
    ex = SessionExtractor()
    ex.feed(0, b'{"type":"session","version":4,"id":"s","isSeeded":false}')
    out = ex.feed(1, b'{"type":"user/message","seq":0,"data":{"content":[{"type":"text","text":"a\\ud800b"}],'
                     b'"source":{"kind":"user"},"id":"m"}}')
    assert out == [TextRecord("s", 0, U, "a\ufffdb", "m")]
    state = json.loads(json.dumps(ex.state.to_json()))
    cursor = SessionCursor.from_json({"log": LogCursor.start("x.jsonl").to_json(), "state": state})
    assert cursor.state == ex.state and cursor.last_seq == 0


# ---- other logs -----------------------------------------------------------------------------------------


def test_other_jsonl_is_followed_by_complete_lines(tmp_path: Path) -> None:
    p = tmp_path / "history.jsonl"
    p.write_bytes('{"note":"é"}\n{"note":"torn'.encode())
    first = read_other_log(p)
    assert first.text == '{"note":"é"}'
    with open(p, "ab") as f:
        f.write(b'"}\n')
    second = read_other_log(p, first.cursor)
    assert second.text == '{"note":"torn"}'
    assert read_other_log(p, second.cursor).text == ""


def test_other_documents_are_read_whole_bounded_and_binary_is_refused(tmp_path: Path) -> None:
    md = tmp_path / "notes.md"
    md.write_bytes("\ufeff# Notes\nREMEMBER: é".encode())
    first = read_other_log(md)
    assert first.text == "# Notes\nREMEMBER: é" and not first.truncated
    assert read_other_log(md, first.cursor).text == ""
    md.write_bytes("é".encode() * 100)
    cut = read_other_log(md, first.cursor, max_bytes=51)
    assert cut.text == "é" * 25 and cut.truncated
    blob = tmp_path / "data.json"
    blob.write_bytes(b"\x00\x01\x02" * 1000)
    refused = read_other_log(blob)
    assert refused.binary and refused.text == "" and refused.warnings


def test_records_carry_their_events_time_on_both_read_paths(tmp_path: Path) -> None:
    """Evidence says when a thing was said (issue 13): the event's ``time`` (epoch ms), read from a decoded
    event and from an assistant line read by the fast path alike; a missing or bad time is None."""
    header = {"type": "session", "version": 4, "id": "s-time", "createdAt": 1786012345678, "cwd": "/tmp/x",
              "isSeeded": False, "delegationDepth": 0}

    def user(seq: int, time: object, text: str) -> str:
        return json.dumps({"type": "user/message", "seq": seq, "time": time, "data": {
            "content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "role": "user", "id": f"u{seq}"}})

    assistant = json.dumps({"type": "assistant/message", "seq": 2, "time": 1786012347000, "data": {"message": {
        "role": "assistant", "id": "a2", "content": [{"type": "text", "text": "hello"}]}}}, separators=(",", ":"))
    lines = [json.dumps(header), user(1, 1786012346480, "hi"), assistant, user(3, "soon", "again")]
    extractor = SessionExtractor()
    records = [r for i, line in enumerate(lines) for r in extractor.feed(i, line.encode())]
    assert [(r.seq, r.time) for r in records] == [(1, 1786012346480.0), (2, 1786012347000.0), (3, None)]
