"""The wire contract (``mmd.wire``) held against ``schema/*.json``, and its consumers held to the wire.

The method table must list exactly the schema's methods, each with the same
params, the same required ones and the same JSON types; every event topic must
have a schema def; every message TypedDict must have the keys (and required
keys) of its schema def. The daemon binds one handler per method, and the
client derives its resend/session rules and its error classes from the same
table, so a method added in one place and not the other fails here.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest

from mmd.wire import events, protocol
from mmd.wire.methods import METHODS, Method, Param, check_params
from mmd.wire.protocol import DaemonCode, DaemonError, UnknownMethod

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"
RPC = json.loads((SCHEMA_DIR / "rpc.schema.json").read_text(encoding="utf-8"))["$defs"]
EVENTS = json.loads((SCHEMA_DIR / "events.schema.json").read_text(encoding="utf-8"))["$defs"]
JSON_TYPES = {str: "string", int: "integer", bool: "boolean", list: "array", float: "number"}
ENUM_TYPES = {**JSON_TYPES, type(None): "null"}


def json_types(node: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    """The JSON types a schema node accepts, following local ``$ref``, ``anyOf``/``oneOf`` and ``enum``."""
    if "$ref" in node:
        node = defs[node["$ref"].removeprefix("#/$defs/")]
    found: set[str] = {ENUM_TYPES[type(v)] for v in node.get("enum", [])}
    kind = node.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(kind)
    for branch in node.get("anyOf", []) + node.get("oneOf", []):
        found |= json_types(branch, defs)
    return found


def test_every_method_is_in_the_schema_and_every_schema_method_is_in_the_table() -> None:
    in_schema = {d.removesuffix(".params") for d in RPC if d.endswith(".params")}
    assert sorted(set(METHODS) - in_schema) == [], "methods the schema does not describe"
    assert sorted(in_schema - set(METHODS)) == [], "schema methods the wire does not list"
    assert all(f"{name}.result" in RPC for name in METHODS)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_each_method_has_the_schema_params_required_flags_and_types(name: str) -> None:
    method, schema = METHODS[name], RPC[f"{name}.params"]
    assert method.name == name
    assert schema["additionalProperties"] is False
    assert set(method.params) == set(schema["properties"])
    assert {k for k, p in method.params.items() if p.required} == set(schema.get("required", []))
    for key, param in method.params.items():
        accepted = json_types(schema["properties"][key], RPC) - {"null"}
        assert accepted == {JSON_TYPES[t] for t in param.types}, f"{name}.{key}"


def test_the_request_def_ties_each_method_name_to_its_params() -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads((SCHEMA_DIR / "rpc.schema.json").read_text(encoding="utf-8"))
    request = Draft202012Validator({**schema, "$ref": "#/$defs/request"})
    for name, method in METHODS.items():
        bare = {"jsonrpc": "2.0", "id": 1, "method": name, "params": {}}
        assert request.is_valid(bare) == (not any(p.required for p in method.params.values())), name


def test_every_topic_has_a_schema_def_with_seq_and_at_and_no_other() -> None:
    assert set(events.TOPICS) == {d for d in EVENTS if "/" in d}
    assert set(events.EVENT_PAYLOADS) == set(events.TOPICS)


MESSAGES: list[tuple[type, dict[str, Any]]] = [
    (protocol.OpenResult, RPC["openResult"]),
    (protocol.CandidateSource, RPC["candidateSource"]),
    (protocol.CandidateJson, RPC["candidate"]),
    (protocol.QueueListResult, RPC["queue.list.result"]),
    (protocol.QueueAcceptResult, RPC["queueAccepted"]),
    (protocol.ErrorObject, RPC["errorObject"]),
    (protocol.Request, RPC["request"]),
    (protocol.IngestSourceStatus, RPC["ingestSource"]),
    (protocol.IngestSourceBackfill, RPC["ingestSource"]["properties"]["backfill"]),
    (events.ChangedItem, EVENTS["presentTopic"]),
    *((events.EVENT_PAYLOADS[topic], EVENTS[topic]) for topic in events.TOPICS),
]


@pytest.mark.parametrize(("shape", "schema"), MESSAGES, ids=[m[0].__name__ for m in MESSAGES])
def test_each_message_typeddict_has_the_keys_of_its_schema_def(shape: Any, schema: dict[str, Any]) -> None:
    assert set(shape.__annotations__) == set(schema["properties"])
    required = set(schema.get("required", []))
    if shape is events.ChangedItem:  # one shape for added/updated (with sha256) and removed (without)
        required -= {"sha256"}
    assert required_keys(shape) == required


def required_keys(shape: Any) -> set[str]:
    """The keys not marked ``NotRequired`` (read from the hints: the wire's modules postpone annotations)."""
    hints = typing.get_type_hints(shape, include_extras=True)
    return {key for key, hint in hints.items() if typing.get_origin(hint) is not typing.NotRequired}


def test_check_params_refuses_what_the_table_refuses() -> None:
    assert check_params("memory.read", {"topic": "a", "sessionId": None}) == {"topic": "a"}
    with pytest.raises(UnknownMethod) as unknown:
        check_params("memory.forget", {})
    assert unknown.value.code == "E_INVALID"
    for bad in ({"topic": 3}, {"topic": "a", "extra": 1}, {"content": "x"}, {"topic": "\ud800", "content": "x"}):
        with pytest.raises(DaemonError) as error:
            check_params("memory.write", bad)
        assert error.value.code == "E_INVALID" and not isinstance(error.value, UnknownMethod)
    with pytest.raises(DaemonError):
        check_params("queue.accept", {"id": 1, "replace": 1})
    with pytest.raises(DaemonError):
        check_params("memory.search", {"query": "q", "limit": True})  # JSON true is not an integer here


def test_the_daemon_binds_exactly_one_handler_per_method_and_checks_it_at_import() -> None:
    from mmd.daemon import methods as daemon_methods
    from mmd.daemon.handling import bind

    assert set(daemon_methods._HANDLERS) == set(METHODS)

    class Incomplete:
        @daemon_methods.handles(METHODS["memory.open"])
        def open(self, p: dict[str, Any]) -> None: ...

    with pytest.raises(TypeError, match="no handler for"):
        bind(Incomplete)

    class WrongKind(daemon_methods.Methods):
        @daemon_methods.handles(METHODS["memory.open"])
        async def open(self, p: dict[str, Any]) -> Any: ...  # type: ignore[override]

    with pytest.raises(TypeError, match="coroutine"):
        bind(WrongKind)

    extra = Method("memory.forget", {"topic": Param((str,), True)})

    class Unknown:
        @daemon_methods.handles(extra)
        def forget(self, p: dict[str, Any]) -> None: ...

    with pytest.raises(TypeError, match="not in"):
        bind(Unknown)


def test_the_client_derives_its_tables_from_the_wire() -> None:
    from mmctl import _base, errors
    from mmctl import events as client_events

    from mmd.core.errors import ErrorCode

    assert _base.IDEMPOTENT == {n for n, m in METHODS.items() if m.idempotent}
    assert _base.SESSION_METHODS == {n for n, m in METHODS.items() if "sessionId" in m.params}
    assert "memory.write" not in _base.IDEMPOTENT and "memory.read" in _base.IDEMPOTENT
    assert client_events.TOPICS is events.TOPICS
    assert set(errors._BY_CODE) <= {c.value for c in DaemonCode} | {c.value for c in ErrorCode}


def test_one_attempt_decides_resends_and_retries_for_both_clients() -> None:
    from mmctl._base import RESTART_RETRY_S, Attempt
    from mmctl.errors import ConflictError

    read = Attempt.start("memory.read", 1000, now_s=10.0)
    assert read.resend_after_timeout() and not read.resend_after_timeout()
    write = Attempt.start("memory.write", 1000, now_s=10.0)
    assert not write.resend_after_timeout()
    stopping = {"id": 1, "error": {"code": -32000, "message": "stopping", "data": {"code": "E_SHUTTING_DOWN"}}}
    assert write.retry_pause_s(stopping, now_s=10.5) == RESTART_RETRY_S
    assert write.retry_pause_s(stopping, now_s=11.0) is None  # the deadline passed: the refusal is the answer
    assert write.retry_pause_s({"id": 1, "result": {}}, now_s=10.1) is None
    conflict = {"id": 1, "error": {"code": -32000, "message": "stale", "data": {"code": "E_CONFLICT", "revision": 3}}}
    with pytest.raises(ConflictError) as stale:
        Attempt.result(conflict)
    assert stale.value.revision == 3
    assert Attempt.result({"id": 1, "result": 5}, lambda r: r + 1) == 6


def test_the_error_codes_are_the_schemas() -> None:
    from mmd.core.errors import ErrorCode

    listed = set(RPC["errorData"]["properties"]["code"]["enum"])
    assert {c.value for c in DaemonCode} | {c.value for c in ErrorCode} == listed
