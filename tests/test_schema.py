"""The JSON Schemas in ``schema/`` against the real daemon's wire.

Every schema must be a valid Draft 2020-12 schema that covers every method of
:data:`mmd.wire.methods.METHODS` and every topic of :data:`mmd.wire.events.TOPICS`
(``tests/test_wire.py`` holds the wire's table and shapes against them in detail).
Then a real ``mmd`` (subprocess) answers every method, error paths and both
write outcomes included, and publishes every event topic; each reply's
``result`` (or error envelope) and each event payload must validate. A few
negative examples keep the schemas from being vacuous.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from mmd.wire.events import TOPICS
from mmd.wire.methods import METHODS
from tests.test_daemon_helpers import DaemonProcess, Subscriber, sync_call
from tests.test_ingest_helpers import dsh_line, user_message, wait_until

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"
SCHEMA_FILES = ("memory.schema.json", "rpc.schema.json", "events.schema.json")
SCHEMAS: dict[str, dict[str, Any]] = {
    name: json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8")) for name in SCHEMA_FILES}
REGISTRY: Registry = Registry().with_resources(
    (s["$id"], Resource.from_contents(s, default_specification=DRAFT202012)) for s in SCHEMAS.values())
RPC_ID = SCHEMAS["rpc.schema.json"]["$id"]
EVENTS_ID = SCHEMAS["events.schema.json"]["$id"]
SESSION_ID = "session-5c4e0a3b-schema-test"


def validator(schema_id: str, pointer: str = "") -> Draft202012Validator:
    """A validator for ``schema_id#pointer`` (``pointer`` a JSON pointer such as ``/$defs/request``)."""
    return Draft202012Validator({"$ref": f"{schema_id}#{pointer}"}, registry=REGISTRY)


def rpc_def(name: str) -> Draft202012Validator:
    return validator(RPC_ID, f"/$defs/{name}")


def event_def(topic: str) -> Draft202012Validator:
    return validator(EVENTS_ID, "/$defs/" + topic.replace("~", "~0").replace("/", "~1"))


def check(v: Draft202012Validator, instance: Any, what: str) -> None:
    """Validate, failing with every error's path and message."""
    errors = sorted(v.iter_errors(instance), key=lambda e: list(e.absolute_path))
    assert not errors, f"{what}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}" for e in errors)


def refuses(v: Draft202012Validator, instance: Any) -> bool:
    return not v.is_valid(instance)


# --- the schemas themselves -----------------------------------------------------------------------


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_each_schema_is_a_valid_draft_2020_12_schema(name: str) -> None:
    schema = SCHEMAS[name]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:  # pragma: no cover - the message is the point
        pytest.fail(f"{name}: {error.message} at {list(error.absolute_path)}")
    # every $ref resolves (a typo would only show when a message reaches it)
    for pointer in _refs(schema):
        resolver = REGISTRY.resolver(base_uri=schema["$id"])
        resolver.lookup(pointer)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_the_events_schema_has_one_def_per_topic_each_with_seq_and_at() -> None:
    defs = SCHEMAS["events.schema.json"]["$defs"]
    for topic in TOPICS:
        assert topic in defs, topic
        assert {"seq", "at"} <= set(defs[topic]["required"]), topic
        assert defs[topic]["additionalProperties"] is False, topic


# --- negative examples: the schemas refuse what the daemon never sends -----------------------------


NOTE = {"topic": "deploy", "memoryId": "local", "summary": "how we deploy", "tags": ["ops"],
        "file": "memories/deploy.md", "updated": "2026-01-02T03:04:05.000Z", "bodyChars": 5, "writeBudget": 4000,
        "entryBody": "", "uri": "mm://local/deploy", "body": "hello", "missingFile": False}
INDEX_USAGE = {"entries": 1, "lines": 9, "bytes": 200, "lineCap": 200, "byteCap": 25600, "overBudget": False,
               "overflowLines": 0, "overflowBytes": 0}
WRITE_USAGE = {"bodyChars": 5, "writeBudget": 4000, "overflow": 0, "noteBytes": 120, "noteMaxBytes": 65536,
               "index": INDEX_USAGE}


def test_negative_examples_fail() -> None:
    note = validator(SCHEMAS["memory.schema.json"]["$id"])
    check(note, NOTE, "the sample note")
    assert refuses(note, {k: v for k, v in NOTE.items() if k != "uri"})
    assert refuses(note, {**NOTE, "extra": 1})
    assert refuses(note, {**NOTE, "topic": "../etc"})
    assert refuses(note, {**NOTE, "file": "/etc/passwd"})
    assert refuses(note, {**NOTE, "bodyChars": -1})

    ok = {"ok": True, "topic": "deploy", "uri": "mm://local/deploy", "action": "created", "usage": WRITE_USAGE,
          "revision": 2}
    failure = {"ok": False, "code": "E_WRITE_BUDGET_EXCEEDED", "message": "too long",
               "reason": "E_WRITE_BUDGET_EXCEEDED", "usage": {**WRITE_USAGE, "noteBytes": 0}, "topic": "deploy",
               "revision": 2}
    write = rpc_def("memory.write.result")
    check(write, ok, "write success")
    check(write, failure, "write failure")
    assert refuses(write, {**ok, "ok": False})  # a success shape with ok:false is neither
    assert refuses(write, {**failure, "code": "E_NOPE"})
    assert refuses(write, {**ok, "action": "replaced"})
    assert refuses(write, {k: v for k, v in ok.items() if k != "revision"})
    assert refuses(write, {**ok, "usage": {**WRITE_USAGE, "index": {**INDEX_USAGE, "bytes": "200"}}})

    assert refuses(rpc_def("memory.write.params"), {"topic": "x"})  # no content
    assert refuses(rpc_def("memory.write.params"), {"topic": "x", "content": "y", "force": True})
    assert refuses(rpc_def("memory.search.params"), {"query": "   "})
    assert refuses(rpc_def("queue.list.params"), {"limit": 1001})
    assert refuses(rpc_def("queue.get.params"), {"id": 0})
    assert refuses(rpc_def("memory.read.result"), {"topic": "deploy"})
    check(rpc_def("memory.read.result"), None, "memory.read of an unknown topic")

    error = rpc_def("errorResponse")
    good = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad", "data": {"code": "E_INVALID"}}}
    check(error, good, "an error response")
    assert refuses(error, {**good, "error": {"code": -32602, "message": "bad"}})  # no data.code
    assert refuses(error, {**good, "error": {"code": -32602, "message": "bad", "data": {"code": "E_WHAT"}}})
    assert refuses(error, {**good, "error": {"code": -32000, "message": "x", "data": {"code": "E_CONFLICT"}}})
    assert refuses(error, {**good, "result": None})
    assert refuses(rpc_def("successResponse"), {"jsonrpc": "1.0", "id": 1, "result": {}})

    changed = event_def("memory/changed")
    event = {"seq": 3, "at": "2026-01-02T03:04:05.000Z", "revision": 2, "cause": "write",
             "added": [{"topic": "deploy", "sha256": "0" * 64}], "updated": [], "removed": [{"topic": "old"}]}
    check(changed, event, "a memory/changed event")
    assert refuses(changed, {k: v for k, v in event.items() if k != "seq"})
    assert refuses(changed, {**event, "at": "yesterday"})
    assert refuses(changed, {**event, "cause": "magic"})
    assert refuses(changed, {**event, "added": [{"topic": "deploy"}]})  # added topics carry their hash
    beat = event_def("daemon/heartbeat")
    assert refuses(beat, {"seq": 0, "at": "2026-01-02T03:04:05.000Z", "revision": 1, "queuePending": 0})
    assert refuses(event_def("queue/added"), {"seq": 1, "at": "2026-01-02T03:04:05.000Z", "ids": [],
                                              "sessionId": None, "source": "/x"})


def test_the_injection_schemas_refuse_what_the_daemon_never_sends() -> None:
    none = {"mode": "none", "text": "", "added": [], "updated": [], "removed": [], "unchanged": 3, "reminded": [],
            "bytes": 0, "token": "t", "revision": 2, "committed": False}
    inject = rpc_def("memory.inject.result")
    check(inject, none, "a none injection")
    assert refuses(inject, {**none, "text": "x", "bytes": 1})  # none says nothing
    assert refuses(inject, {**none, "mode": "delta"})  # a delta has text
    assert refuses(inject, {**none, "mode": "baseline", "text": "x", "bytes": 1, "added": ["a"]})
    assert refuses(inject, {**none, "mode": "reminder", "text": "x", "bytes": 1})  # a reminder names its topics
    assert refuses(inject, {k: v for k, v in none.items() if k != "token"})
    due = {"seq": 4, "at": "2026-01-02T03:04:05.000Z", "topic": "node", "uri": "mm://local/node",
           "reviewAfter": "2026-01-02", "daysLeft": 0}
    check(event_def("memory/due"), due, "a memory/due event")
    assert refuses(event_def("memory/due"), {**due, "daysLeft": 3})  # announced only once it has come
    assert refuses(event_def("memory/due"), {**due, "reviewAfter": "in March"})
    assert refuses(rpc_def("memory.write.params"), {"topic": "x", "content": "y", "reviewAfter": "soon"})
    check(rpc_def("memory.write.params"), {"topic": "x", "content": "y", "reviewAfter": " 10d "}, "a span")


# --- the real daemon ----------------------------------------------------------------------------------


class Wire:
    """Calls a daemon and validates every answer; remembers which methods returned a validated result."""

    def __init__(self, daemon: DaemonProcess) -> None:
        self.daemon = daemon
        self.covered: set[str] = set()
        self._request = rpc_def("request")
        self._success = rpc_def("successResponse")
        self._error = rpc_def("errorResponse")

    def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The validated result of a call that must succeed."""
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        check(self._request, request, f"request {method}")
        answer = sync_call(self.daemon.rpc, method, params)
        assert "error" not in answer, f"{method} {params}: {answer['error']}"
        check(self._success, answer, f"{method} envelope")
        check(rpc_def(f"{method}.result"), answer["result"], f"{method} result")
        self.covered.add(method)
        return answer["result"]

    def error(self, method: str, params: dict[str, Any] | None, code: str, *, raw: bytes | None = None,
              schema_refuses: bool = False) -> dict[str, Any]:
        """The validated error object of a call that must fail with ``data.code == code``.

        With ``schema_refuses``, the request itself must also fail the ``request`` def: the schema
        says no where the daemon says no.
        """
        answer = sync_call(self.daemon.rpc, method, params, raw=raw)
        assert "error" in answer, f"{method} {params}: expected {code}, got {answer}"
        check(self._error, answer, f"{method} error envelope")
        assert answer["error"]["data"]["code"] == code, answer
        if schema_refuses:
            assert refuses(self._request, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}})
        return dict(answer["error"])


def write_session_log(sessions: Path) -> Path:
    """A small DSH v4 log with three human REMEMBER/MEMO prompts; the folder has no session.lock."""
    folder = sessions / "--home-test-schema--" / SESSION_ID
    folder.mkdir(parents=True)
    header = {"type": "session", "version": 4, "id": SESSION_ID, "createdAt": 1791383800000,
              "cwd": "/home/test/schema", "isSeeded": False, "delegationDepth": 0}
    log = folder / "session.v4.jsonl"
    log.write_bytes(b"".join([
        (json.dumps(header) + "\n").encode(),
        dsh_line(0, "turn/start", {"turn": 1}),
        user_message(1, "REMEMBER: staging deploys need the VPN.", "m-1"),
        user_message(2, "MEMO: the on-call rota lives in the ops wiki.", "m-2"),
        user_message(3, "MEMO: release notes go out on Fridays.", "m-3"),
    ]))
    return log


def assert_status_has_queue_fields(wire: Wire) -> None:
    """``daemon.status`` reports the review queue and ingestion (``null`` when ingestion is off)."""
    status = sync_call(wire.daemon.rpc, "daemon.status").get("result") or {}
    assert "queue" in status and "ingest" in status, status


def backfilled(wire: Wire) -> dict[str, Any]:
    """``daemon.status`` once the ingest backfill is done."""
    assert_status_has_queue_fields(wire)

    def done() -> dict[str, Any] | None:
        st = wire.result("daemon.status")
        return st if st["ingest"]["backfill"]["done"] and st["ingest"]["phase"] == "following" else None

    return dict(wait_until(done, timeout_s=10.0, what="the ingest backfill"))


def test_every_rpc_reply_matches_its_schema(start_daemon, tmp_path: Path) -> None:
    write_session_log(tmp_path / "sessions")
    wire = Wire(start_daemon("--heartbeat-ms", "200", "--git"))
    st = backfilled(wire)
    assert st["queue"]["pending"] == 3 and st["watcher"] is not None
    _memory_methods(wire, tmp_path)
    _queue_methods(wire)
    _error_paths(wire)
    _git_methods(wire)
    assert wire.covered == set(METHODS), f"methods never validated: {sorted(set(METHODS) - wire.covered)}"


def _memory_methods(wire: Wire, tmp_path: Path) -> None:
    # reads of an empty root
    assert wire.result("memory.index")["entries"] == []
    assert wire.result("memory.read", {"topic": "nothing-yet"}) is None
    assert wire.result("memory.list") == {"notes": []}
    # both write outcomes, every refusal the core has short of the index cap
    created = wire.result("memory.write", {"topic": "deploy", "content": "Staging deploys need the VPN.",
                                           "summary": "how we deploy", "tags": ["ops", "Staging Env"]})
    assert created["ok"] is True and created["action"] == "created"
    over = wire.result("memory.write", {"topic": "deploy", "content": "x" * 50, "budget": 10})
    assert over["ok"] is False and over["code"] == "E_WRITE_BUDGET_EXCEEDED" and over["usage"]["overflow"] == 40
    huge = wire.result("memory.write", {"topic": "huge", "content": "y" * 70_000, "budget": 100_000})
    assert huge["ok"] is False and huge["code"] == "E_FILE_BUDGET_EXCEEDED"
    blank = wire.result("memory.write", {"topic": "blank", "content": "  \n "})
    assert blank["ok"] is False and blank["code"] == "E_INVALID"
    # a session: writes count, reads stay on the pinned revision
    opened = wire.result("memory.open")
    sid = opened["sessionId"]
    updated = wire.result("memory.write", {"topic": "deploy", "content": "Staging and prod deploys need the VPN.",
                                           "tags": "ops,vpn", "sessionId": sid, "ifRevision": created["revision"]})
    assert updated["action"] == "updated" and updated["pendingWrites"] == 1
    wire.result("memory.write", {"topic": "oncall", "content": "The rota lives in the ops wiki.", "sessionId": sid})
    assert wire.result("memory.read", {"topic": "oncall", "sessionId": sid}) is None  # pinned before the write
    assert wire.result("memory.reload", {"sessionId": sid})["revision"] > opened["revision"]
    note = wire.result("memory.read", {"topic": "oncall", "sessionId": sid})
    assert note["uri"] == "mm://local/oncall"
    assert "entries" in wire.result("memory.read", {"sessionId": sid})  # no topic: the index view
    assert len(wire.result("memory.index", {"sessionId": sid})["entries"]) == 2
    assert [n["topic"] for n in wire.result("memory.list", {"sessionId": sid})["notes"]] == ["deploy", "oncall"]
    for mode in ("scan", "fts5", "auto", None):
        found = wire.result("memory.search", {"query": "VPN deploys", "mode": mode, "limit": 5, "sessionId": sid})
        assert found["matches"] and found["matches"][0]["topic"] == "deploy"
    assert wire.result("memory.search", {"query": "nothing matches this"})["total"] == 0
    budget = wire.result("memory.budget", {"sessionId": sid})
    assert budget["detail"]["noteCount"] == 2 and budget["pendingWrites"] == 0
    wire.result("memory.budget")
    nudge = wire.result("memory.nudge", {"sessionId": sid})
    assert nudge["noteCount"] == 2
    wire.result("memory.nudge")
    wire.result("memory.write", {"topic": "oncall-extra", "content": "Swaps go through the rota channel.",
                                 "tags": "rota"})
    merged = wire.result("memory.merge", {"topics": ["oncall-extra"], "into": "oncall", "sessionId": sid})
    assert merged["ok"] is True and merged["merged"] == ["oncall-extra"] and merged["pendingWrites"] == 1
    assert wire.result("memory.merge", {"topics": ["deploy"], "into": "deploy-all", "ifRevision": merged["revision"],
                                        })["action"] == "created"
    wire.result("memory.merge", {"topics": ["deploy-all"], "into": "deploy"})
    renamed = wire.result("memory.rename", {"topic": "deploy", "to": "deploys"})
    assert renamed["ok"] is True and renamed["from"] == "deploy" and "pendingWrites" not in renamed
    assert wire.result("memory.rename", {"topic": "deploys", "to": "deploy"})["topic"] == "deploy"
    wire.error("memory.rename", {"topic": "deploy", "to": "not a slug"}, "E_INVALID", schema_refuses=True)
    wire.error("memory.rename", {"topic": "deploy", "to": "oncall"}, "E_INVALID")  # has a note: refused
    deleted = wire.result("memory.delete", {"topic": "oncall", "sessionId": sid})
    assert deleted["removed"] is True and deleted["pendingWrites"] == 2
    assert wire.result("memory.delete", {"topic": "never-was"})["removed"] is False
    assert wire.result("memory.close", {"sessionId": sid}) == {"ok": True, "sessionId": sid, "pendingWrites": 2}
    # the memory home (issue 27): a note moved into a project's root, then read in that scope
    folder = tmp_path / "a-project"
    folder.mkdir()
    wire.result("memory.write", {"topic": "to-move", "content": "moves into a project"})
    adopted = wire.result("memory.adopt", {"topics": ["to-move"], "project": str(folder)})
    assert adopted["ok"] is True and adopted["moved"] == ["to-move"] and set(adopted["revisions"]) == {
        "user", wire.result("memory.index", {"project": str(folder)})["scope"]}
    assert wire.result("memory.read", {"topic": "to-move", "project": str(folder)})["body"] == "moves into a project"
    assert wire.result("memory.read", {"topic": "to-move"}) is None
    # digests: text, a file (a session log), and no source at all
    text = "REMEMBER: keep the VPN config in 1Password.\nSummary: deploys are gated.\n## Release day\nFridays."
    digested = wire.result("memory.digest", {"text": text, "maxItems": 10, "topicHint": "vpn"})
    assert {c["kind"] for c in digested["candidates"]} == {"explicit", "summary", "heading"}
    log = next((tmp_path / "sessions").rglob("session.v4.jsonl"))
    assert wire.result("memory.digest", {"file": str(log)})["sourceKind"] == "session-log"
    assert wire.result("memory.digest")["sourceKind"] == "none"
    _inject_methods(wire)


def _inject_methods(wire: Wire) -> None:
    """memory.inject in every mode, memory.injected, memory.due, and reviewAfter on a write."""
    wire.result("memory.write", {"topic": "stale", "content": "Node 20.", "reviewAfter": "2000-01-01"})
    wire.result("memory.write", {"topic": "fresh", "content": "Later.", "reviewAfter": "3m"})
    wire.result("memory.write", {"topic": "fresh", "content": "Later.", "reviewAfter": ""})
    assert wire.result("memory.inject", {"client": "schema", "maxBytes": 4096, "commit": True})["mode"] == "baseline"
    assert wire.result("memory.inject", {"client": "schema", "commit": True})["mode"] == "reminder"
    none = wire.result("memory.inject", {"client": "schema"})
    assert none["mode"] == "none" and none["text"] == ""
    assert wire.result("memory.injected", {"client": "schema", "token": none["token"]})["ok"] is True
    wire.result("memory.write", {"topic": "fresh", "content": "Later, again."})
    assert wire.result("memory.inject", {"client": "schema"})["updated"] == ["fresh"]
    due = wire.result("memory.due", {"withinDays": 0})
    assert [d["topic"] for d in due["due"]] == ["stale"]
    assert wire.result("memory.due")["today"] == due["today"]


def _queue_methods(wire: Wire) -> None:
    page = wire.result("queue.list")
    assert page["total"] == 3 and [c["status"] for c in page["candidates"]] == ["pending"] * 3
    first, second, third = (c["id"] for c in page["candidates"])
    assert wire.result("queue.list", {"status": "all", "limit": 2, "offset": 1})["candidates"][0]["id"] == second
    assert wire.result("queue.get", {"id": first}) == wire.result("queue.get", {"id": str(first)})
    refused = wire.result("queue.accept", {"project": "user", "id": first, "topic": "too-long", "content": "z" * 4001})
    assert refused["ok"] is False and refused["candidate"]["status"] == "pending"
    accepted = wire.result("queue.accept", {"project": "user", "id": first, "topic": "vpn", "tags": ["ops"],
                                            "summary": "VPN rule"})
    assert accepted["ok"] is True and accepted["candidate"]["written"]["topic"] == "vpn"
    rejected = wire.result("queue.reject", {"id": second, "reason": "already in the wiki"})
    assert rejected["candidate"]["reason"] == "already in the wiki"
    assert wire.result("queue.reject", {"id": second})["candidate"]["status"] == "rejected"  # a no-op
    assert wire.result("queue.list", {"status": "accepted"})["candidates"][0]["decidedAt"]
    assert wire.result("queue.list", {"status": "rejected"})["total"] == 1
    assert wire.result("queue.get", {"id": third})["source"]["kind"] == "user"
    assert wire.result("daemon.status")["queue"] == {"pending": 1, "accepted": 1, "rejected": 1, "expired": 0,
                                                     "total": 3, "shown": 1}
    undone = wire.result("queue.undo", {"id": first})
    assert undone["reverted"] == "deleted" and undone["candidate"]["status"] == "pending"
    assert wire.result("queue.undo", {"id": second})["reverted"] is None
    assert wire.result("queue.accept", {"project": "user", "id": first, "topic": "vpn"})["ok"] is True
    wire.error("queue.undo", {"id": third}, "E_INVALID")
    # an agent's proposals (issue 28): every status of the answer, and a replace shown beside the note
    queued = wire.result("memory.propose", {"content": "Releases are cut on Tuesdays.", "agent": "codex",
                                            "session": "s-9", "reason": "the person said so"})
    assert queued["status"] == "queued" and queued["candidate"]["proposal"]["by"] == "codex"
    assert wire.result("memory.propose", {"content": "Releases are cut on Tuesdays!"})["status"] == "merged"
    replace = wire.result("memory.propose", {"topic": "vpn", "action": "replace",
                                             "content": "Connect through WireGuard since March."})
    vpn = wire.result("memory.read", {"topic": "vpn"})["body"]
    assert wire.result("queue.get", {"id": replace["id"]})["proposal"]["current"] == vpn
    assert wire.result("memory.propose", {"content": vpn, "topic": "vpn"})["status"] == "held"
    wire.result("queue.reject", {"id": replace["id"]})
    assert wire.result("memory.propose", {"topic": "vpn", "action": "replace",
                                          "content": "Connect through WireGuard since March."})["status"] == "rejected"
    wire.error("memory.propose", {"topic": "vpn", "action": "create", "content": "x"}, "E_EXISTS")


def _error_paths(wire: Wire) -> None:
    err = wire.error("memory.index", None, "E_PARSE", raw=b"{not json")
    assert err["code"] == -32700
    assert wire.error("memory.index", None, "E_INVALID", raw=b"[1, 2]")["code"] == -32600
    assert wire.error("memory.forget", {}, "E_INVALID")["code"] == -32601
    assert wire.error("memory.write", {"topic": "../up", "content": "x"}, "E_INVALID", schema_refuses=True)[
        "code"] == -32602
    wire.error("memory.write", {"topic": "x", "content": "y", "force": True}, "E_INVALID", schema_refuses=True)
    wire.error("memory.write", {"topic": "x"}, "E_INVALID", schema_refuses=True)
    wire.error("memory.search", {"query": "vpn", "limit": 0}, "E_INVALID", schema_refuses=True)
    wire.error("memory.search", {"query": " "}, "E_INVALID", schema_refuses=True)
    wire.error("queue.list", {"limit": 5000}, "E_INVALID", schema_refuses=True)
    wire.error("queue.get", {"id": "x"}, "E_INVALID", schema_refuses=True)
    wire.error("memory.inject", {"client": ""}, "E_INVALID", schema_refuses=True)
    wire.error("memory.inject", {"client": "a", "maxBytes": 0}, "E_INVALID", schema_refuses=True)
    wire.error("memory.injected", {"client": "a"}, "E_INVALID", schema_refuses=True)
    wire.error("memory.injected", {"client": "a", "token": "never-given"}, "E_NOT_FOUND")
    wire.error("memory.due", {"withinDays": -1}, "E_INVALID", schema_refuses=True)
    wire.error("memory.write", {"topic": "x", "content": "y", "reviewAfter": "next spring"}, "E_INVALID",
               schema_refuses=True)
    wire.error("memory.read", {"topic": "deploy", "sessionId": "no-such-session"}, "E_NO_SESSION")
    wire.error("memory.close", {"sessionId": "no-such-session"}, "E_NO_SESSION")
    conflict = wire.error("memory.write", {"topic": "deploy", "content": "x", "ifRevision": 1}, "E_CONFLICT")
    assert conflict["data"]["revision"] > 1
    wire.error("memory.delete", {"topic": "deploy", "ifRevision": 1}, "E_CONFLICT")
    wire.error("memory.digest", {"file": "/nonexistent/mmd-schema-test.md"}, "E_DIGEST_SOURCE")
    wire.error("queue.get", {"id": 999}, "E_NOT_FOUND")
    accepted = wire.result("queue.list", {"status": "accepted"})["candidates"][0]["id"]
    assert wire.error("queue.accept", {"project": "user", "id": accepted}, "E_DECIDED")["data"]["status"] == "accepted"
    wire.error("queue.reject", {"id": accepted}, "E_DECIDED")
    big = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "memory.write",
                      "params": {"topic": "big", "content": "b" * (4 * 1024 * 1024 + 1)}}).encode()
    assert wire.error("memory.write", None, "E_TOO_LARGE", raw=big)["code"] == -32600


def _git_methods(wire: Wire) -> None:
    """The history and sync methods of a daemon run with ``--git`` (no remote configured)."""
    commits = wire.result("memory.log")["commits"]
    assert commits and commits[0]["revisions"]
    rev = f"r{commits[0]['revisions'][0]}"
    assert wire.result("memory.log", {"topic": "vpn", "limit": 5})["commits"]
    diff = wire.result("memory.diff", {"rev": rev})
    assert diff["to"] == commits[0]["commit"]
    wire.result("memory.diff", {"rev": commits[-1]["commit"], "other": rev})
    restored = wire.result("memory.restore", {"topic": "vpn", "at": rev})
    assert restored["action"] == "write"
    assert wire.result("memory.revert", {"rev": rev})["commit"] == commits[0]["commit"]
    synced = wire.result("memory.sync")
    assert synced["ok"] and synced["note"] and not synced["pushed"]
    git = wire.result("daemon.status")["git"]
    assert git["remoteConfigured"] is False and git["lastSync"]["ok"] is True
    wire.error("memory.diff", {"rev": "r999999"}, "E_INVALID")
    wire.error("memory.restore", {"topic": "never-was", "at": rev}, "E_NOT_FOUND")
    wire.error("memory.log", {"limit": 0}, "E_INVALID", schema_refuses=True)


def test_without_ingestion_the_queue_errors_and_status_match_the_schema(start_daemon) -> None:
    wire = Wire(start_daemon("--no-ingest"))
    assert_status_has_queue_fields(wire)
    st = wire.result("daemon.status")
    assert st["queue"] is None and st["ingest"] is None and st["git"] is None
    for method, params in (("queue.list", {}), ("queue.get", {"id": 1}), ("queue.accept", {"project": "user", "id": 1}),
                           ("queue.reject", {"id": 1}), ("memory.diff", {"rev": "r1"}),
                           ("memory.revert", {"rev": "r1"}), ("memory.sync", {})):
        assert wire.error(method, params, "E_UNAVAILABLE")["code"] == -32000
    # without --git, the log and restore read the version history (issue 29)
    assert wire.result("memory.log", {}) == {"commits": []}
    assert wire.error("memory.restore", {"topic": "x", "at": "r1"}, "E_NOT_FOUND")["code"] == -32000


async def test_every_event_topic_matches_its_schema(start_daemon, tmp_path: Path) -> None:
    log = write_session_log(tmp_path / "sessions")
    daemon = start_daemon("--heartbeat-ms", "100", "--nudge-interval-ms", "300", "--session-idle-seconds", "1",
                          "--git")
    wire = Wire(daemon)
    await asyncio.to_thread(backfilled, wire)
    sub = Subscriber(daemon.pub)
    seen: dict[str, list[dict[str, Any]]] = {topic: [] for topic in TOPICS}
    union = validator(EVENTS_ID)

    def record(topic: str, payload: dict[str, Any]) -> bool:
        check(event_def(topic), payload, f"{topic} event")
        check(union, payload, f"{topic} event against the root schema")
        seen[topic].append(payload)
        return True

    async def expect(pred: Any, what: str) -> dict[str, Any]:
        try:
            _, payload = await sub.wait_for(lambda t, p: record(t, p) and pred(t, p), timeout_s=8.0)
        except TimeoutError:
            pytest.fail(f"no {what} event within 8 s; seen: { {t: len(v) for t, v in seen.items()} }")
        return payload

    try:
        await sub.ready()
        await expect(lambda t, p: t == "daemon/heartbeat", "daemon/heartbeat")
        # memory/changed: a write and a delete
        out = await asyncio.to_thread(wire.result, "memory.write", {"topic": "deploy", "content": "Use the VPN."})
        changed = await expect(lambda t, p: t == "memory/changed" and p["revision"] == out["revision"],
                               "memory/changed (write)")
        assert changed["cause"] == "write" and changed["added"][0]["topic"] == "deploy"
        await asyncio.to_thread(wire.result, "memory.delete", {"topic": "deploy"})
        gone = await expect(lambda t, p: t == "memory/changed" and p["cause"] == "delete", "memory/changed (delete)")
        assert gone["removed"] == [{"topic": "deploy"}]
        # memory/due: a write whose review date has come
        await asyncio.to_thread(wire.result, "memory.write", {"topic": "stale", "content": "Node 20.",
                                                              "reviewAfter": "0d"})
        due = await expect(lambda t, p: t == "memory/due", "memory/due")
        assert due["topic"] == "stale" and due["daysLeft"] == 0
        # memory/synced: a sync (no remote configured: committed locally only)
        await asyncio.to_thread(wire.result, "memory.sync")
        synced = await expect(lambda t, p: t == "memory/synced", "memory/synced")
        assert synced["ok"] and synced["merged"] == "none" and synced["error"] is None
        # queue/added: a human prompt appended to the followed log
        with open(log, "ab") as f:
            f.write(user_message(4, "REMEMBER: the staging database is reset nightly.", "m-4"))
        added = await expect(lambda t, p: t == "queue/added", "queue/added")
        assert added["sessionId"] == SESSION_ID and added["source"] == str(log)
        # queue/decided: an accept, its undo, a reject
        cid = added["ids"][0]
        await asyncio.to_thread(wire.result, "queue.accept", {"project": "user", "id": cid, "topic": "staging-db"})
        decided = await expect(lambda t, p: t == "queue/decided", "queue/decided (accept)")
        assert (decided["id"], decided["status"], decided["topic"]) == (cid, "accepted", "staging-db")
        await asyncio.to_thread(wire.result, "queue.undo", {"id": cid})
        await expect(lambda t, p: t == "queue/decided" and p["status"] == "pending", "queue/decided (undo)")
        await asyncio.to_thread(wire.result, "queue.reject", {"id": cid})
        await expect(lambda t, p: t == "queue/decided" and p["status"] == "rejected", "queue/decided (reject)")
        # memory/nudge: on the schedule, at an RPC session's end, and when the agent session goes quiet
        await expect(lambda t, p: t == "memory/nudge" and p["reason"] == "schedule", "memory/nudge (schedule)")
        sid = (await asyncio.to_thread(wire.result, "memory.open"))["sessionId"]
        await asyncio.to_thread(wire.result, "memory.close", {"sessionId": sid})
        await expect(lambda t, p: t == "memory/nudge" and p.get("sessionId") == sid, "memory/nudge (rpc session-end)")
        quiet = await expect(lambda t, p: t == "memory/nudge" and p.get("sessionId") == SESSION_ID,
                             "memory/nudge (agent session-end)")
        assert quiet["reason"] == "session-end" and quiet["source"] == str(log)
    finally:
        sub.close()
    seqs = [p["seq"] for events in seen.values() for p in events]
    assert len(set(seqs)) == len(seqs) and all(events for events in seen.values())
