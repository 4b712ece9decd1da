"""examples/extractor/llm_extractor.py against a local OpenAI-compatible endpoint of our own (a real HTTP server
on a real socket, canned answers): what it sends, what it keeps, how it fails. Issue 13 "Optional extractor command".
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "examples" / "extractor" / "llm_extractor.py"
CONTRACT = json.loads((REPO / "schema" / "extractor.schema.json").read_text(encoding="utf-8"))
SESSION = {"version": 1, "agent": "claude-code", "sessionId": "s-1", "project": "/home/ana/shop",
           "file": "/logs/s-1.jsonl", "utterances": [
               {"index": 0, "who": "human", "text": "never push to main without a review, we squash-merge PRs",
                "at": None, "position": {"file": "/logs/s-1.jsonl", "line": 0}},
               {"index": 1, "who": "assistant", "text": "The flaky test came from the shared tmp dir; fixed by "
                "giving each worker its own.", "at": None, "position": {"file": "/logs/s-1.jsonl", "line": 3}}]}


class Endpoint:
    """A chat-completions endpoint answering each POST with the next canned ``(status, content)``."""

    def __init__(self, answers: list[tuple[int, str]]) -> None:
        self.answers = answers
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                       "body": json.loads(self.rfile.read(int(self.headers["Content-Length"])))})
                status, content = outer.answers.pop(0)
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def endpoint() -> Iterator[Any]:
    made: list[Endpoint] = []

    def make(*answers: tuple[int, str]) -> Endpoint:
        made.append(Endpoint(list(answers)))
        return made[-1]

    yield make
    for e in made:
        e.server.shutdown()
        e.server.server_close()


def run(url: str, session: dict[str, Any] = SESSION, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT)], input=json.dumps(session), capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin", "MMD_LLM_URL": url, "MMD_LLM_MODEL": "m-1",
                                           **env})


def test_it_sends_the_transcript_and_prints_only_well_formed_candidates(endpoint) -> None:  # type: ignore[no-untyped-def]
    answer = {"candidates": [
        {"body": "Never push to main without a review; PRs are squash-merged.", "kind": "rule", "utterance": 0,
         "quote": "never push to main without a review"},
        {"body": "Each test worker needs its own tmp dir.", "kind": "pitfall", "utterance": 1,
         "quote": "words that are not in the message"},
        {"body": "", "kind": "rule"}, {"kind": "fact"}, "not an object",
        {"body": "A fact of the session as a whole.", "kind": "gossip", "utterance": 99}]}
    server = endpoint((200, "Here you are:\n" + json.dumps(answer)))
    done = run(server.url, MMD_LLM_API_KEY="k-123")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert Draft202012Validator({**CONTRACT, "$ref": "#/$defs/output"}).is_valid(out)
    assert out["candidates"] == [
        {"body": "Never push to main without a review; PRs are squash-merged.", "kind": "rule", "utterance": 0,
         "quote": "never push to main without a review"},
        {"body": "Each test worker needs its own tmp dir.", "kind": "pitfall", "utterance": 1},  # quote not in it
        {"body": "A fact of the session as a whole.", "kind": "fact"}]  # unknown kind and utterance dropped
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k-123"
    assert request["body"]["model"] == "m-1"
    sent = request["body"]["messages"][1]["content"]
    assert sent.splitlines()[0] == "[0] human: never push to main without a review, we squash-merge PRs"
    assert sent.splitlines()[1].startswith("[1] assistant: The flaky test came from the shared tmp dir")


def test_a_long_session_sends_its_newest_part(endpoint) -> None:  # type: ignore[no-untyped-def]
    server = endpoint((200, '{"candidates": []}'))
    done = run(server.url, MMD_LLM_MAX_CHARS="120")
    assert done.returncode == 0 and json.loads(done.stdout) == {"candidates": []}
    sent = server.requests[0]["body"]["messages"][1]["content"]
    assert sent.startswith("[1] assistant:") and "[0] human" not in sent


def test_failures_exit_1_with_one_line_and_print_nothing(endpoint) -> None:  # type: ignore[no-untyped-def]
    server = endpoint((500, "boom"), (200, "no json at all"))
    for expected in ("HTTPError", "ValueError"):
        done = run(server.url)
        assert (done.returncode, done.stdout) == (1, "") and done.stderr.startswith(f"llm_extractor: {expected}")
    unset = subprocess.run([sys.executable, str(SCRIPT)], input=json.dumps(SESSION), capture_output=True,
                           text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert unset.returncode == 1 and "set MMD_LLM_URL and MMD_LLM_MODEL" in unset.stderr
