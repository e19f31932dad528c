"""A real OpenAI-compatible HTTP server for tests, on 127.0.0.1 and a free port.

    from openai_stub import serve_stub

    with serve_stub(latency=0.01) as server:
        settings = JudgeSettings(base_url=server.url, api_key="test", cache_path=...)
        ...
        assert server.chat_calls == 3

    # or, for a command run in this process or a child process:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)   # see also server.environ()

It answers POST /v1/chat/completions and POST /v1/embeddings (also under /openai/deployments/NAME/
for Azure clients) like the real API, so the `openai` client runs unpatched:

- chat replies follow rules (`RULES`) keyed by the metric, found from the request's json_schema name
  or, with json_object, from words of the prompt; the rules read the tagged sections of qareport's
  prompts (<reference_answer>, <candidate_answer>, <answer>, <reference_contexts>, <context
  number="N">): claims and statements are the parts of a text between semicolons. A custom metric's
  prompt (graphrag-eval 6.x's custom_evaluations: "separated by tab characters", then "- key:
  description" lines) gets one tab-separated value per output (`rule_custom`). Tests can replace a rule
  (`server.rules["answer_correctness"] = fn`) or script the next replies (`server.script(...)`).
- embeddings are deterministic vectors from a hash of each text (`stub_embedding`), so tests can
  compute the expected similarities.
- faults for the next requests, in order: `Fault(status=429, headers={"Retry-After": "0.1"})`,
  `Fault(status=500)`, `Fault(sleep=1.0)` (answer late, past a client timeout), `Fault(content="not
  json")` (a 200 reply whose content is garbage), `Fault(content=json.dumps({...}))`,
  `Fault(data=nan_component)` (a 200 embeddings reply whose `data` items a function rewrites: see
  `nan_component`, `infinite_component`, `zero_vectors`, `string_indexes`, `reversed_indexes`,
  `duplicate_indexes`, `one_vector_less`). NaN and Infinity go out as the bare JSON words `NaN`
  and `Infinity`, as a faulty server writes them (Python's and the SDK's JSON reader accept them).
- `server.always(fault)`: a fault for every request of its kind that no scripted fault claims
  (an endpoint that is down or wrong for good); `server.always(None, path=...)` ends it.
- `latency` seconds before every reply; `requests` records every request (path, JSON body,
  headers); `max_in_flight` is the largest number of requests handled at once.
- `usage`: (prompt_tokens, completion_tokens) reported for every chat reply, or None to count words;
  embeddings report `embedding_tokens_per_input` tokens per input. `usage="chars"` counts as the
  README's estimate rule does (`chars_tokens`): a text is ceil(characters / 4) tokens; a chat
  request is 3 + per message (4 + its content's tokens) + the tokens of its JSON schema; a reply's
  content, its tokens; an embeddings request, the tokens of its inputs.
- `known_models`: when set, any other model gets 404; `api_key`: when set, any other key gets 401
  (whose message repeats the key received, worse than the real API, to test that it is scrubbed).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EMBEDDING_DIMENSIONS = 8


def stub_embedding(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """The vector the stub returns for `text`: deterministic, from SHA-256, components in [-1, 1],
    exactly representable as float32."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    while len(digest) < dimensions:
        digest += hashlib.sha256(digest).digest()
    return [(byte - 128) / 128 for byte in digest[:dimensions]]


def chars_tokens(text: str) -> int:
    """Tokens of a text as `usage="chars"` counts them: ceil(characters / 4)."""
    return -(-len(text) // 4)


def chars_prompt_tokens(body: dict[str, Any]) -> int:
    tokens = 3 + sum(4 + chars_tokens(str(m.get("content") or "")) for m in body.get("messages") or [])
    schema = (body.get("response_format") or {}).get("json_schema")
    if schema is not None:
        tokens += chars_tokens(json.dumps(schema, separators=(",", ":")))
    return tokens


def claims(text: str) -> list[str]:
    """The stub's notion of claims: the non-empty parts of a text between semicolons."""
    return [part.strip() for part in text.split(";") if part.strip()]


def section(prompt: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", prompt, re.DOTALL)
    return match.group(1) if match else None


def contexts_of(prompt: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r'<context number="\d+">\n?(.*?)\n?</context>', prompt, re.DOTALL)]


# --- rules: metric -> (prompt, request body) -> reply object ------------------------------------


def rule_answer_correctness(prompt: str, body: dict[str, Any]) -> dict[str, Any]:
    reference = claims(section(prompt, "reference_answer") or "")
    actual = claims(section(prompt, "candidate_answer") or "")
    actual_set = {c.lower() for c in actual}
    matching = sum(1 for c in reference if c.lower() in actual_set)
    return {
        "reason": f"stub: {len(reference)} reference claims, {len(actual)} actual, {matching} matching",
        "reference_claims_count": len(reference),
        "actual_claims_count": len(actual),
        "matching_claims_count": matching,
    }


NONCOMMITTAL = ("i don't know", "not sure", "cannot answer")


def generated_questions(answer: str, count: int) -> list[str]:
    """The questions the stub generates from an answer."""
    return [f"What is {answer.strip()}? ({i + 1})" for i in range(count)]


def rule_answer_relevance(prompt: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = section(prompt, "answer") or ""
    match = re.search(r"\b(\d+) different questions", prompt)
    count = int(match.group(1)) if match else 3
    noncommittal = any(phrase in answer.lower() for phrase in NONCOMMITTAL)
    return {"questions": [{"question": q, "noncommittal": noncommittal}
                          for q in generated_questions(answer, count)]}


def _attributed(prompt: str, reference: str) -> dict[str, Any]:
    """Each statement of the prompt's `reference` section, attributed when a context contains it."""
    contexts = [c.lower() for c in contexts_of(prompt)]
    return {"statements": [
        {"statement": s, "reason": "stub", "attributed": any(s.lower() in c for c in contexts)}
        for s in claims(reference)
    ]}


def _useful(prompt: str, reference: str) -> dict[str, Any]:
    """Each context of the prompt, useful when it contains a statement of `reference`."""
    statements = [s.lower() for s in claims(reference)]
    return {"verdicts": [
        {"context": n, "reason": "stub", "useful": any(s in c.lower() for s in statements)}
        for n, c in enumerate(contexts_of(prompt), start=1)
    ]}


def rule_retrieval_answer_recall(prompt: str, body: dict[str, Any]) -> dict[str, Any]:
    return _attributed(prompt, section(prompt, "reference_answer") or "")


def rule_retrieval_answer_precision(prompt: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = section(prompt, "reference_answer")
    if answer is None:
        answer = section(prompt, "answer") or ""
    return _useful(prompt, answer)


def rule_retrieval_context_recall(prompt: str, body: dict[str, Any]) -> dict[str, Any]:
    return _attributed(prompt, section(prompt, "reference_contexts") or "")


def rule_retrieval_context_precision(prompt: str, body: dict[str, Any]) -> dict[str, Any]:
    return _useful(prompt, section(prompt, "reference_contexts") or "")


def markdown_section(prompt: str, header: str) -> str | None:
    """The text under a `# Header` line of a custom metric's prompt, up to the next header."""
    match = re.search(rf"^# {re.escape(header)}\n(.*?)(?=^# |\Z)", prompt, re.DOTALL | re.MULTILINE)
    return match.group(1).strip() if match else None


def rule_custom(prompt: str, body: dict[str, Any]) -> str:
    """A custom LLM metric (graphrag-eval 6.x's custom_evaluations): one tab-separated value per
    output listed as "- key: description". An output described as a fraction gets the share of the
    reference answer's claims (parts between semicolons) that the actual answer states; any other
    output a short text naming it."""
    listed = prompt.split("separated by tab characters:", 1)[-1]
    outputs = re.findall(r"^- ([^:\n]+): (.*)$", listed.split("\n\n", 1)[0], re.MULTILINE)
    reference = claims(markdown_section(prompt, "Reference answer") or "")
    actual = {c.lower() for c in claims(markdown_section(prompt, "Actual answer") or "")}
    share = sum(1 for c in reference if c.lower() in actual) / len(reference) if reference else 0.0
    values = [repr(round(share, 4)) if "fraction" in description else f"stub says {key}"
              for key, description in outputs]
    return "\t".join(values)


RULES: dict[str, Callable[[str, dict[str, Any]], Any]] = {
    "answer_correctness": rule_answer_correctness,
    "answer_relevance": rule_answer_relevance,
    "retrieval_answer_recall": rule_retrieval_answer_recall,
    "retrieval_answer_precision": rule_retrieval_answer_precision,
    "retrieval_context_recall": rule_retrieval_context_recall,
    "retrieval_context_precision": rule_retrieval_context_precision,
    "custom": rule_custom,
}
_KEYWORDS = (
    ("separated by tab characters", "custom"),
    ("reference_claims_count", "answer_correctness"),
    ("noncommittal", "answer_relevance"),
    ("attributed", "retrieval_answer_recall"),
    ("useful", "retrieval_answer_precision"),
)


def metric_of(body: dict[str, Any]) -> str | None:
    """Which metric a chat request is for."""
    response_format = body.get("response_format") or {}
    name = (response_format.get("json_schema") or {}).get("name")
    if name in RULES:
        return name
    prompt = first_user_message(body)
    if "<reference_contexts>" in prompt:
        return "retrieval_context_recall" if "attributed" in prompt else "retrieval_context_precision"
    for word, metric in _KEYWORDS:
        if word in prompt:
            return metric
    return None


def first_user_message(body: dict[str, Any]) -> str:
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


# --- the server ----------------------------------------------------------------------------------


@dataclass
class Fault:
    """What to do instead of (or before) answering one request.

    status: answer with this HTTP error status; headers: extra response headers;
    sleep: wait this long first (then answer normally, unless status or content is set);
    content: answer 200 with this message content (chat only).
    data: rewrite the `data` items of a 200 embeddings reply (embeddings only).
    reply: answer 200 with this JSON as the whole chat reply (chat only): a malformed completion.
    `path`: "chat", "embeddings" or None for either.
    """

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    sleep: float = 0.0
    content: str | None = None
    data: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    reply: Any = None
    path: str | None = None
    message: str = "stub fault"


# --- embeddings replies that a faulty server sends (for Fault(data=...)) -------------------------


def nan_component(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first vector's first component is NaN."""
    return [{**item, "embedding": [float("nan"), *item["embedding"][1:]]} if n == 0 else item
            for n, item in enumerate(data)]


def infinite_component(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last vector's last component is Infinity."""
    last = len(data) - 1
    return [{**item, "embedding": [*item["embedding"][:-1], float("inf")]} if n == last else item
            for n, item in enumerate(data)]


def zero_vectors(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every vector all zeros (no direction: every cosine would be 0)."""
    return [{**item, "embedding": [0.0] * len(item["embedding"])} for item in data]


def string_indexes(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each index sent as text ("0", "1", ..., "10"): sorted as text, "10" comes before "2"."""
    return [{**item, "index": str(item["index"])} for item in data]


def reversed_indexes(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The vectors in input order, labelled with the indexes of the reverse order."""
    last = len(data) - 1
    return [{**item, "index": last - item["index"]} for item in data]


def duplicate_indexes(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every vector labelled index 0."""
    return [{**item, "index": 0} for item in data]


def one_vector_less(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last vector left out."""
    return data[:-1]


@dataclass
class RecordedRequest:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    started: float
    status: int = 0
    reply: str | None = None  # the content of a chat reply the stub sent

    @property
    def kind(self) -> str:
        return "embeddings" if self.path.endswith("/embeddings") else "chat"


class StubOpenAI:
    def __init__(self, *, latency: float = 0.0, usage: tuple[int, int] | str | None = None):
        self.latency = latency
        self.usage = usage
        self.embedding_tokens_per_input = 5
        self.rules = dict(RULES)
        self.known_models: set[str] | None = None
        self.api_key: str | None = None
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._faults: deque[Fault] = deque()
        self._always: dict[str, Fault] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def root_url(self) -> str:
        """Without /v1, e.g. as an Azure endpoint."""
        return self.url[: -len("/v1")]

    def environ(self, api_key: str = "sk-test") -> dict[str, str]:
        """Environment variables that point qareport (or any openai client) at this server."""
        return {"OPENAI_BASE_URL": self.url, "OPENAI_API_KEY": api_key}

    def script(self, *faults: Fault) -> None:
        """Apply these to the next matching requests, in order."""
        with self._lock:
            self._faults.extend(faults)

    def always(self, fault: Fault | None, *, path: str | None = None) -> None:
        """Apply `fault` to every request of its kind (`fault.path`, else `path`; None: both kinds)
        that no scripted fault claims, until `always(None, path=...)`."""
        kind = fault.path if fault is not None and fault.path else path
        with self._lock:
            for name in ([kind] if kind else ["chat", "embeddings"]):
                if fault is None:
                    self._always.pop(name, None)
                else:
                    self._always[name] = fault

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._faults.clear()
            self._always.clear()
            self.max_in_flight = 0

    @property
    def chat_calls(self) -> int:
        return sum(1 for r in self.requests if r.kind == "chat")

    @property
    def embedding_calls(self) -> int:
        return sum(1 for r in self.requests if r.kind == "embeddings")

    @property
    def calls(self) -> int:
        return len(self.requests)

    def start(self) -> StubOpenAI:
        stub = self

        class Handler(_Handler):
            server_stub = stub

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.stub = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01},
                                        name="openai-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> StubOpenAI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- used by the handler

    def _next_fault(self, kind: str) -> Fault | None:
        with self._lock:
            for index, fault in enumerate(self._faults):
                if fault.path in (None, kind):
                    del self._faults[index]
                    return fault
            return self._always.get(kind)

    def _enter(self, record: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    stub: StubOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        error = sys.exc_info()[1]
        if isinstance(error, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)):
            return  # the client gave up (a timeout test): nothing to answer
        if error is not None:
            self.stub.errors.append(error)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall
    server_stub: StubOpenAI

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_stub_{id(payload)}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_error"}.get(
            status, "server_error")
        self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": None}},
                   headers)

    def do_POST(self) -> None:
        stub = self.server_stub
        raw = self._read_body()
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        path = self.path.split("?")[0]
        record = RecordedRequest(path, body, {k.lower(): v for k, v in self.headers.items()}, time.monotonic())
        stub._enter(record)
        try:
            status = self._answer(stub, path, body, record)
            record.status = status
        finally:
            stub._leave()

    def _answer(self, stub: StubOpenAI, path: str, body: dict[str, Any], record: RecordedRequest) -> int:
        kind = "embeddings" if path.endswith("/embeddings") else "chat"
        if not (path.endswith("/chat/completions") or path.endswith("/embeddings")):
            self._error(404, f"stub: no route {path}")
            return 404
        fault = stub._next_fault(kind)
        if stub.latency:
            time.sleep(stub.latency)
        if fault is not None and fault.sleep:
            time.sleep(fault.sleep)
        if stub.api_key is not None:
            auth = self.headers.get("Authorization") or self.headers.get("api-key") or ""
            if auth not in (f"Bearer {stub.api_key}", stub.api_key):
                # echoes the key it got, to test that the judge never repeats a key it is sent back
                self._error(401, f"stub: incorrect API key provided: {auth.removeprefix('Bearer ')}")
                return 401
        model = body.get("model")
        if stub.known_models is not None and model not in stub.known_models:
            self._error(404, f"stub: the model `{model}` does not exist")
            return 404
        if fault is not None and fault.status is not None:
            self._error(fault.status, fault.message, fault.headers)
            return fault.status
        if kind == "embeddings":
            payload = self._embeddings(stub, body)
            if fault is not None and fault.data is not None:
                payload["data"] = fault.data(payload["data"])
            self._send(200, payload)
            return 200
        if fault is not None and fault.reply is not None:
            self._send(200, fault.reply)
            return 200
        if fault is not None and fault.content is not None:
            content = fault.content
        else:
            metric = metric_of(body)
            if metric is None or metric not in stub.rules:
                self._error(400, "stub: cannot tell which metric this prompt is for")
                return 400
            reply = stub.rules[metric](first_user_message(body), body)
            content = reply if isinstance(reply, str) else json.dumps(reply)
        record.reply = content
        self._send(200, self._completion(stub, body, content))
        return 200

    def _completion(self, stub: StubOpenAI, body: dict[str, Any], content: str) -> dict[str, Any]:
        if stub.usage == "chars":
            prompt_tokens, completion_tokens = chars_prompt_tokens(body), chars_tokens(content)
        elif isinstance(stub.usage, tuple):
            prompt_tokens, completion_tokens = stub.usage
        else:
            prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])
            completion_tokens = len(content.split())
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "stub",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _embeddings(self, stub: StubOpenAI, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        data = []
        for index, text in enumerate(inputs or []):
            vector = stub_embedding(str(text))
            if body.get("encoding_format") == "base64":
                embedding: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
            else:
                embedding = vector
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = stub.embedding_tokens_per_input * len(data)
        if stub.usage == "chars":
            tokens = sum(chars_tokens(str(text)) for text in inputs or [])
        return {
            "object": "list",
            "data": data,
            "model": body.get("model") or "stub-embedding",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


@contextmanager
def serve_stub(**kwargs: Any) -> Iterator[StubOpenAI]:
    """Start a stub server for the duration of a `with` block."""
    server = StubOpenAI(**kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()
