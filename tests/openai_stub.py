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
  headers); `max_in_flight` is the largest number of requests handled at once. `gzip=True`: every
  reply body goes out gzip-compressed (`Content-Encoding: gzip`), as some gateways send it.
- `usage`: (prompt_tokens, completion_tokens) reported for every chat reply, or None to count words;
  embeddings report `embedding_tokens_per_input` tokens per input. `usage="chars"` counts as the
  README's estimate rule does (`chars_tokens`); `usage="none"`: chat replies without a usage block: a text is ceil(characters / 4) tokens; a chat
  request is 3 + per message (4 + its content's tokens) + the tokens of its JSON schema; a reply's
  content, its tokens; an embeddings request, the tokens of its inputs.
- the Batch API: POST /v1/files (a multipart upload, purpose `batch`), GET /v1/files/ID/content,
  POST /v1/batches, GET /v1/batches (a list, newest first), GET /v1/batches/ID, POST
  /v1/batches/ID/cancel. A batch's replies are computed
  when it is created, each line exactly as a direct request with the same body would be answered
  (the same rules, usage and scripted faults, taken in the file's order; a fault's HTTP status
  becomes a line of the error file), and written in shuffled order (`batch_seed`). How the next
  batches end is set with `server.plan_batches(BatchPlan(...))`: `delay` seconds in progress (else
  `batch_delay`), then `completed`, `expired` with only the first `done` lines answered, `failed`
  (nothing answered); `fail_lines` makes lines of the error file (custom ids, or the first N lines),
  and so does `fail_matching` (the lines whose request body holds one of its texts); `lost_lines`
  leaves lines out of a completed batch's output file, `output_text` replaces the file's content;
  `kind` keeps a plan for the next batch of chat or of embeddings.
  `server.batches` holds each batch (its lines in `lines`); `server.batch_lines` counts the lines
  submitted; `direct_calls` counts chat and embeddings requests sent directly.
- models that come and go: `retired_models` get 404 `model_not_found` saying the model "has been
  deprecated"; `default_temperature_only` refuse a temperature other than 1 with HTTP 400
  (`param: temperature`, `unsupported_value`), as reasoning models do; `completion_tokens_only`
  refuse `max_tokens` (HTTP 400, `unsupported_parameter`: use `max_completion_tokens`).
- `snapshots`: requested model -> the dated snapshot a chat reply names in its `model` field, as
  the real API answers an alias (default: the model requested).
- `known_models`: when set, any other model gets 404; `api_key`: when set, any other key gets 401
  (whose message repeats the key received, worse than the real API, to test that it is scrubbed).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import random
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import policy as email_policy
from email.parser import BytesParser
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
    raw: str | None = None  # answer 200 with this text as the whole body (chat only): any JSON, however deep
    trickle: float = 0.0  # send the reply's body one byte every `trickle` seconds (the headers at once)
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
    peer: int = 0  # the client's port: requests with the same peer came over one connection

    @property
    def kind(self) -> str:
        """"chat", "embeddings", or "files" / "batches" for the Batch API's routes."""
        if "/files" in self.path:
            return "files"
        if "/batches" in self.path:
            return "batches"
        return "embeddings" if self.path.endswith("/embeddings") else "chat"


@dataclass
class BatchPlan:
    """How one batch ends (`StubOpenAI.plan_batches`). `fail_lines`: custom ids whose lines go to the
    error file (an int: the first N lines of the file, whose order follows the custom ids, which
    change with the stub's port); `fail_matching`: texts whose lines (their request body as JSON)
    go to the error file too, the same lines in every run."""

    outcome: str = "completed"  # completed, expired, failed
    delay: float | None = None  # seconds in progress (None: the stub's batch_delay)
    done: int = 0  # expired: lines answered before it expired
    fail_lines: set[str] | int = field(default_factory=set)
    fail_matching: tuple[str, ...] = ()
    kind: str | None = None  # "chat" or "embeddings": only for the next batch of that endpoint
    lost_lines: int = 0  # lines left out of the output file (its counts still say them done)
    output_text: bytes | None = None  # the output file's whole content instead of its lines


@dataclass
class StubBatch:
    id: str
    endpoint: str
    input_file_id: str
    created: float
    plan: BatchPlan
    lines: list[dict[str, Any]]
    output: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    cancelled: bool = False
    output_file_id: str | None = None
    error_file_id: str | None = None


class StubOpenAI:
    def __init__(self, *, latency: float = 0.0, usage: tuple[int, int] | str | None = None, tls: Any = None,
                 gzip: bool = False):
        self.latency = latency
        self.tls = tls  # an ssl.SSLContext (server side): serve https
        self.gzip = gzip  # send every reply body gzip-compressed (Content-Encoding: gzip)
        self.usage = usage
        self.embedding_tokens_per_input = 5
        self.rules = dict(RULES)
        self.known_models: set[str] | None = None
        self.retired_models: set[str] = set()  # 404 model_not_found, "has been deprecated", as OpenAI says
        self.default_temperature_only: set[str] = set()  # 400 for any temperature but 1 (reasoning models)
        self.completion_tokens_only: set[str] = set()  # 400 for max_tokens: use max_completion_tokens
        self.snapshots: dict[str, str] = {}  # requested model -> the snapshot chat replies name (as the API does)
        self.api_key: str | None = None
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._faults: deque[Fault] = deque()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, StubBatch] = {}
        self.batch_delay = 0.0
        self.batch_create_delay = 0.0  # seconds POST /v1/batches takes before it answers
        self.batches_created = 0
        self.batch_seed = 7
        self._plans: deque[BatchPlan] = deque()
        self._always: dict[str, Fault] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.connections: set[Any] = set()  # the client connections open now

    # -- control

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the server first"
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls is not None else 'http'}://{host}:{port}/v1"

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

    def plan_batches(self, *plans: BatchPlan) -> None:
        """How the next batches created end, in order (then: completed after `batch_delay`)."""
        with self._lock:
            self._plans.extend(plans)

    @property
    def batch_lines(self) -> int:
        return sum(len(batch.lines) for batch in self.batches.values())

    @property
    def direct_calls(self) -> int:
        return sum(1 for r in self.requests if r.kind in ("chat", "embeddings"))

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

    def drop_connections(self) -> int:
        """Close every client connection, as a server does with idle keep-alive connections (the
        client is not told); how many were closed."""
        with self._lock:
            connections = list(self.connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return len(connections)

    def start(self) -> StubOpenAI:
        stub = self

        class Handler(_Handler):
            server_stub = stub

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.stub = self
        if self.tls is not None:
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
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
    request_queue_size = 128  # 32 workers connecting at once: with the default 5 the kernel drops
    # connection requests, which the client sends again after a second (a stall that is the stub's)
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

    def setup(self) -> None:
        super().setup()
        with self.server_stub._lock:
            self.server_stub.connections.add(self.connection)

    def finish(self) -> None:
        with self.server_stub._lock:
            self.server_stub.connections.discard(self.connection)
        super().finish()

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
        self._send_text(status, json.dumps(payload), headers)

    def _send_text(self, status: int, text: str, headers: dict[str, str] | None = None, *,
                   trickle: float = 0.0) -> None:
        data = text.encode("utf-8")
        payload = text
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if self.server_stub.gzip:
            data = gzip.compress(data)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_stub_{id(payload)}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if trickle:
            self.wfile.flush()
            for at in range(len(data)):
                time.sleep(trickle)
                self.wfile.write(data[at:at + 1])
                self.wfile.flush()
            return
        self.wfile.write(data)
        self.wfile.flush()

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_error"}.get(
            status, "server_error")
        self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": None}},
                   headers)

    def do_GET(self) -> None:
        stub = self.server_stub
        path = self.path.split("?")[0]
        record = RecordedRequest(path, {}, {k.lower(): v for k, v in self.headers.items()}, time.monotonic())
        stub._enter(record)
        try:
            record.status = self._batch_api(stub, "GET", path, b"")
        finally:
            stub._leave()

    def do_POST(self) -> None:
        stub = self.server_stub
        raw = self._read_body()
        path = self.path.split("?")[0]
        if "/files" in path or "/batches" in path:
            record = RecordedRequest(path, {}, {k.lower(): v for k, v in self.headers.items()}, time.monotonic())
            stub._enter(record)
            try:
                record.status = self._batch_api(stub, "POST", path, raw)
            finally:
                stub._leave()
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        record = RecordedRequest(path, body, {k.lower(): v for k, v in self.headers.items()}, time.monotonic(),
                                 peer=self.client_address[1])
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
        if not self._authorized(stub):
            return 401
        if fault is not None and fault.raw is not None:
            self._send_text(200, fault.raw)
            return 200
        status, payload, headers = reply_to(stub, kind, body, fault)
        if status == 200 and kind == "chat" and not (fault is not None and fault.reply is not None):
            record.reply = payload["choices"][0]["message"]["content"]
        self._send_text(status, json.dumps(payload), headers, trickle=fault.trickle if fault is not None else 0.0)
        return status

    def _authorized(self, stub: StubOpenAI) -> bool:
        if stub.api_key is not None:
            auth = self.headers.get("Authorization") or self.headers.get("api-key") or ""
            if auth not in (f"Bearer {stub.api_key}", stub.api_key):
                # echoes the key it got, to test that the judge never repeats a key it is sent back
                self._error(401, f"stub: incorrect API key provided: {auth.removeprefix('Bearer ')}")
                return False
        return True

    # -- the Batch API

    def _batch_api(self, stub: StubOpenAI, method: str, path: str, raw: bytes) -> int:
        if not self._authorized(stub):
            return 401
        parts = [part for part in path.split("/") if part]
        if parts and parts[0] == "v1":
            parts = parts[1:]
        if method == "POST" and parts == ["files"]:
            return self._upload(stub, raw)
        if method == "GET" and len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
            data = stub.files.get(parts[1])
            if data is None:
                self._error(404, f"stub: no file {parts[1]}")
                return 404
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            return 200
        if method == "POST" and parts == ["batches"]:
            return self._create_batch(stub, json.loads(raw or b"{}"))
        if method == "GET" and parts == ["batches"]:  # newest first, in one page
            data = [_batch_object(stub, batch) for batch in reversed(list(stub.batches.values()))]
            self._send(200, {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                             "last_id": data[-1]["id"] if data else None, "has_more": False})
            return 200
        if len(parts) >= 2 and parts[0] == "batches":
            batch = stub.batches.get(parts[1])
            if batch is None:
                self._error(404, f"stub: no batch {parts[1]}")
                return 404
            if method == "POST" and parts[2:] == ["cancel"]:
                delay = stub.batch_delay if batch.plan.delay is None else batch.plan.delay
                batch.cancelled = batch.cancelled or time.monotonic() - batch.created < delay  # not once ended
            elif not (method == "GET" and len(parts) == 2):
                self._error(404, f"stub: no route {method} {path}")
                return 404
            self._send(200, _batch_object(stub, batch))
            return 200
        self._error(404, f"stub: no route {method} {path}")
        return 404

    def _upload(self, stub: StubOpenAI, raw: bytes) -> int:
        message = BytesParser(policy=email_policy.HTTP).parsebytes(
            f"Content-Type: {self.headers.get('Content-Type')}\r\n\r\n".encode() + raw)
        fields: dict[str, bytes] = {}
        filename = "upload.jsonl"
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = part.get_payload(decode=True) or b""
            if name == "file":
                filename = str(part.get_filename() or filename)
        if fields.get("purpose", b"").decode() != "batch" or "file" not in fields:
            self._error(400, "stub: upload a file with purpose 'batch'")
            return 400
        with stub._lock:
            file_id = f"file-stub-{len(stub.files) + 1}"
            stub.files[file_id] = fields["file"]
        self._send(200, {"id": file_id, "object": "file", "bytes": len(fields["file"]), "created_at": int(time.time()),
                         "filename": filename, "purpose": "batch", "status": "processed"})
        return 200

    def _create_batch(self, stub: StubOpenAI, body: dict[str, Any]) -> int:
        time.sleep(stub.batch_create_delay)
        data = stub.files.get(str(body.get("input_file_id")))
        if data is None:
            self._error(400, "stub: no such input file")
            return 400
        lines = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
        endpoint = str(body.get("endpoint"))
        if body.get("completion_window") != "24h" or any(line.get("url") != endpoint for line in lines):
            self._error(400, "stub: a batch's lines must all go to its endpoint, in a 24h window")
            return 400
        models = {line.get("body", {}).get("model") for line in lines}
        if len(models) != 1 or len({line.get("custom_id") for line in lines}) != len(lines):
            self._error(400, "stub: a batch file holds one model and unique custom ids")
            return 400
        kind = "embeddings" if endpoint.endswith("/embeddings") else "chat"
        with stub._lock:
            plan = next((p for p in stub._plans if p.kind in (None, kind)), BatchPlan())
            stub._plans = deque(p for p in stub._plans if p is not plan)
            stub.batches_created += 1
            batch_id = f"batch_stub_{stub.batches_created}"
            batch = StubBatch(batch_id, endpoint, str(body["input_file_id"]), time.monotonic(), plan, lines)
            stub.batches[batch_id] = batch
        answered = lines if plan.outcome == "completed" else lines[:plan.done] if plan.outcome == "expired" else []
        fail = plan.fail_lines
        failing = {line["custom_id"] for line in lines[:fail]} if isinstance(fail, int) else set(fail)
        failing |= {line["custom_id"] for line in lines
                    if any(text in json.dumps(line["body"], ensure_ascii=False) for text in plan.fail_matching)}
        for number, line in enumerate(answered):
            request_id = f"req_{batch_id}_{number}"
            if line["custom_id"] in failing:
                batch.errors.append({"id": f"batch_req_{number}", "custom_id": line["custom_id"], "response": None,
                                     "error": {"code": "server_error", "message": "stub: this line failed"}})
                continue
            status, payload, _ = reply_to(stub, kind, line["body"], stub._next_fault(kind))
            item = {"id": f"batch_req_{number}", "custom_id": line["custom_id"],
                    "response": {"status_code": status, "request_id": request_id, "body": payload}, "error": None}
            (batch.output if status == 200 else batch.errors).append(item)
        random.Random(stub.batch_seed).shuffle(batch.output)
        self._send(200, _batch_object(stub, batch))
        return 200

    @staticmethod
    def _completion(stub: StubOpenAI, body: dict[str, Any], content: str) -> dict[str, Any]:
        if stub.usage == "chars":
            prompt_tokens, completion_tokens = chars_prompt_tokens(body), chars_tokens(content)
        elif stub.usage == "none":
            prompt_tokens = completion_tokens = 0
        elif isinstance(stub.usage, tuple):
            prompt_tokens, completion_tokens = stub.usage
        else:
            prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])
            completion_tokens = len(content.split())
        completion: dict[str, Any] = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": stub.snapshots.get(body.get("model") or "stub", body.get("model") or "stub"),
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
        if stub.usage == "none":  # as some gateways and local servers answer
            del completion["usage"]
        return completion

    @staticmethod
    def _embeddings(stub: StubOpenAI, body: dict[str, Any]) -> dict[str, Any]:
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


def reply_to(stub: StubOpenAI, kind: str, body: dict[str, Any],
             fault: Fault | None) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The status, JSON body and headers the stub answers a chat or embeddings request with."""
    model = body.get("model")
    if model in stub.retired_models:  # as OpenAI answers for a model past its shutdown date
        return _error_body(404, f"The model `{model}` has been deprecated, learn more here: "
                                "https://platform.openai.com/docs/deprecations", code="model_not_found")
    if stub.known_models is not None and model not in stub.known_models:
        return _error_body(404, f"stub: the model `{model}` does not exist")
    if kind == "chat" and model in stub.default_temperature_only and body.get("temperature", 1) != 1:
        return _error_body(400, f"Unsupported value: 'temperature' does not support {body['temperature']} with "
                                "this model. Only the default (1) value is supported.",
                           param="temperature", code="unsupported_value")
    if kind == "chat" and model in stub.completion_tokens_only and "max_tokens" in body:
        return _error_body(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                "Use 'max_completion_tokens' instead.", param="max_tokens",
                           code="unsupported_parameter")
    if fault is not None and fault.status is not None:
        return (*_error_body(fault.status, fault.message)[:2], fault.headers)
    if kind == "embeddings":
        payload = _Handler._embeddings(stub, body)
        if fault is not None and fault.data is not None:
            payload["data"] = fault.data(payload["data"])
        return 200, payload, {}
    if fault is not None and fault.reply is not None:  # a whole malformed chat reply
        return 200, fault.reply, {}
    if fault is not None and fault.content is not None:
        content = fault.content
    else:
        metric = metric_of(body)
        if metric is None or metric not in stub.rules:
            return _error_body(400, "stub: cannot tell which metric this prompt is for")
        reply = stub.rules[metric](first_user_message(body), body)
        content = reply if isinstance(reply, str) else json.dumps(reply)
    return 200, _Handler._completion(stub, body, content), {}


def _error_body(status: int, message: str, *, param: str | None = None,
                code: str | None = None) -> tuple[int, dict[str, Any], dict[str, str]]:
    kind = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
            429: "rate_limit_error"}.get(status, "server_error")
    return status, {"error": {"message": message, "type": kind, "param": param, "code": code}}, {}


def _batch_object(stub: StubOpenAI, batch: StubBatch) -> dict[str, Any]:
    """The batch as GET /v1/batches/ID shows it now; its files are written when it ends."""
    delay = stub.batch_delay if batch.plan.delay is None else batch.plan.delay
    running = time.monotonic() - batch.created < delay
    if batch.cancelled:
        status = "cancelled"
    elif running:
        status = "in_progress"
    else:
        status = batch.plan.outcome
    ended = status in ("completed", "expired", "cancelled")
    if ended and batch.output_file_id is None and batch.error_file_id is None:
        kept_output = [] if batch.cancelled else batch.output
        kept_errors = [] if batch.cancelled else batch.errors
        with stub._lock:
            if kept_output:
                batch.output_file_id = f"file-stub-{len(stub.files) + 1}"
                kept_lines = kept_output[:len(kept_output) - batch.plan.lost_lines]
                stub.files[batch.output_file_id] = batch.plan.output_text if batch.plan.output_text is not None \
                    else "".join(json.dumps(i) + "\n" for i in kept_lines).encode()
            if kept_errors:
                batch.error_file_id = f"file-stub-{len(stub.files) + 1}"
                stub.files[batch.error_file_id] = "".join(json.dumps(i) + "\n" for i in kept_errors).encode()
    done = len(batch.output) if ended and not batch.cancelled else 0
    failed = len(batch.errors) if ended and not batch.cancelled else 0
    now = int(time.time())
    return {
        "id": batch.id, "object": "batch", "endpoint": batch.endpoint, "errors": (
            {"object": "list", "data": [{"code": "invalid_request", "message": "stub: the batch failed",
                                         "line": None, "param": None}]} if status == "failed" else None),
        "input_file_id": batch.input_file_id, "completion_window": "24h", "status": status,
        "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
        "created_at": now, "in_progress_at": now, "expires_at": now + 86400,
        "request_counts": {"total": len(batch.lines), "completed": done, "failed": failed},
        "metadata": None,
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
