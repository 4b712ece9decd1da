#!/usr/bin/env python3
"""An extractor command for mmd that asks a language model which statements of a session are worth keeping.

mmd runs it once per ended agent session (``[candidates] command``): the session arrives as JSON on stdin
(``schema/extractor.schema.json``, ``$defs/session``) and the candidates leave as JSON on stdout
(``$defs/output``). It talks to any OpenAI-compatible chat-completions endpoint — a local Ollama or
llama.cpp server, or a hosted model — with the standard library only:

    MMD_LLM_URL      the API base, e.g. http://localhost:11434/v1 (required)
    MMD_LLM_MODEL    the model name, e.g. qwen2.5:14b (required)
    MMD_LLM_API_KEY  a bearer token, if the endpoint wants one
    MMD_LLM_MAX_CHARS  most transcript code points sent (default 60000; the session's newest part is kept)

Config::

    [candidates]
    command = ["python3", "/path/to/examples/extractor/llm_extractor.py"]
    timeoutMs = 120000

Whatever the model answers, only well-formed items leave: a body, a known kind, an utterance index that exists,
a quote that is in that utterance (else the quote is dropped). Failures (no endpoint, an HTTP error, an answer
that is not JSON) exit 1 with one line on stderr: mmd logs it and shows it in ``mmctl status``.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

KINDS = ("preference", "rule", "fact", "decision", "pitfall", "environment")
MOST = 8
PROMPT = f"""You read the transcript of one session between a person and a coding agent. Pick the statements a
careful engineer would keep in the project's long-term memory: the person's standing rules, preferences and
corrections; decisions with their reasons; pitfalls and their fixes; facts about the environment, tools and
code that stay true after this session. Skip one-off requests, progress reports, plans, questions and anything
true only today. At most {MOST}; fewer is better than padding.

Answer with one JSON object and nothing else:
{{"candidates": [{{"body": "the memory as one self-contained statement", "kind": one of {list(KINDS)},
  "utterance": the [index] of the message it comes from, "quote": "the exact words it rests on"}}]}}"""


def transcript(session: dict[str, Any], max_chars: int) -> str:
    """The session's messages as ``[index] who: text`` lines, newest kept when over ``max_chars`` code points."""
    lines = [f"[{u['index']}] {u['who']}: {u['text'].strip()}" for u in session["utterances"]
             if u["who"] in ("human", "assistant", "summary") and u["text"].strip()]
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        if size + len(line) > max_chars:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(reversed(kept))


def ask(url: str, model: str, key: str | None, text: str) -> str:
    """The model's answer (the first choice's message content)."""
    body = {"model": model, "temperature": 0, "response_format": {"type": "json_object"},
            "messages": [{"role": "system", "content": PROMPT}, {"role": "user", "content": text}]}
    request = urllib.request.Request(url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {key}"} if key else {})})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return str(json.load(answer)["choices"][0]["message"]["content"])


def candidates(answer: str, session: dict[str, Any]) -> list[dict[str, Any]]:
    """The well-formed items of the model's answer, as the extractor contract wants them."""
    start, end = answer.find("{"), answer.rfind("}")
    items = json.loads(answer[start:end + 1]).get("candidates") if start >= 0 else None
    if not isinstance(items, list):
        raise ValueError("the model's answer has no candidates list")
    texts = {u["index"]: u["text"] for u in session["utterances"]}
    out: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("body"), str) or not item["body"].strip():
            continue
        made: dict[str, Any] = {"body": item["body"].strip(),
                                "kind": item["kind"] if item.get("kind") in KINDS else "fact"}
        at = item.get("utterance")
        if isinstance(at, int) and not isinstance(at, bool) and at in texts:
            made["utterance"] = at
            quote = item.get("quote")
            if isinstance(quote, str) and quote.strip() and quote.strip() in texts[at]:
                made["quote"] = quote.strip()
        out.append(made)
    return out[:MOST]


def main() -> int:
    url, model = os.environ.get("MMD_LLM_URL"), os.environ.get("MMD_LLM_MODEL")
    if not url or not model:
        print("llm_extractor: set MMD_LLM_URL and MMD_LLM_MODEL", file=sys.stderr)
        return 1
    session = json.loads(sys.stdin.buffer.read())
    text = transcript(session, int(os.environ.get("MMD_LLM_MAX_CHARS") or 60_000))
    if not text:
        print(json.dumps({"candidates": []}))
        return 0
    try:
        found = candidates(ask(url, model, os.environ.get("MMD_LLM_API_KEY"), text), session)
    except (OSError, urllib.error.URLError, ValueError, KeyError, IndexError, TypeError) as error:
        print(f"llm_extractor: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    print(json.dumps({"candidates": found}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
