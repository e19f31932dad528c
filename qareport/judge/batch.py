"""Judging in batches: the judgments not in the cache go to the OpenAI Batch API (`judge.batch`).

A batch run is a direct run whose requests are answered by batches. It goes in rounds:

1. a *collecting pass* runs every judgment as a direct run would, except that a request with no
   reply yet is recorded (`batch_replies.BatchReplies.defer`: the client raises `Deferred`)
   instead of being sent;
2. the recorded requests are written as JSONL files (one endpoint and one model per file, at most
   MAX_REQUESTS lines and MAX_FILE_BYTES a file), uploaded with purpose `batch`, and submitted with
   a 24 h completion window; each batch's id and the cache keys of its requests are stored in the
   judge cache at once (kind `batch`), so a run that is stopped picks its batches up again (the
   uploaded file is noted before the batch is created: a run stopped in between is found by it;
   another run that finds the note while the noting run is still alive leaves it and looks again
   until the batch exists); a run claims the requests it would submit in the cache, in one
   transaction, before it reads the stored batches, and lets the claims go once its batches are
   recorded: two runs on one cache never both submit a request, the second waits for the first's
   batch);
3. the batches are polled (POLL_FIRST_SEC, growing by POLL_GROWTH up to `judge.batch_poll`) until
   they end, and each reply is stored in the judge cache under its request's key (kind
   `batch_reply`), matched by `custom_id` (the key), in whatever order the output file lists them.

Then the next collecting pass runs: replies from batches go through exactly the checks a direct
reply goes through (`JudgeClient._chat`, `embed`), and what they lead to (a corrective retry after
an unusable reply, answer relevance's embeddings after its questions) is recorded for the next
round. When a pass records nothing, the runner judges for real (`Judge.judge_results`), every
reply coming from the cache or from this run's batches, costed at batch prices, and the batch
replies it used are removed: the accepted ones are in the cache as direct replies are.

A request is never submitted twice while a batch holding it runs: the next identical run finds the
stored batch and waits for it. A line that failed, or that a batch left undone (it expired or was
cancelled with part done: the done part is kept), is submitted again in a new batch, up to
SUBMISSIONS times in all; then that judgment is "not judged" (the API failed), counted like any
judgment the API failed. A batch that failed as a whole (its file was refused) is not submitted
again: its judgments are not judged. Nothing here prints: the state of each batch goes to the
runner's progress stream.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import openai

from qareport.errors import BatchesPending, JudgeError
from qareport.judge.batch_replies import REPLY_PREFIX, BatchReplies, BatchRequest
from qareport.judge.json_depth import load_json
from qareport.progress import OnProgress, ProgressEvent, no_progress

if TYPE_CHECKING:
    from qareport.judge.cache import JudgeCache
    from qareport.judge.client import JudgeClient
    from qareport.judge.settings import JudgeSettings

MAX_REQUESTS = 50_000
"""Requests in one batch file at most (the Batch API's limit)."""
MAX_FILE_BYTES = 200 * 1024 * 1024
"""Size of one batch file at most (the Batch API's limit, 200 MB)."""
COMPLETION_WINDOW = "24h"
SUBMISSIONS = 2
"""Times one request is submitted in a run at most: a failed or undone line goes once more into a
new batch, then its judgment is not judged."""
POLL_FIRST_SEC = 0.5
POLL_GROWTH = 1.5
"""Polling starts POLL_FIRST_SEC after a batch is submitted (or found running) and each interval is
POLL_GROWTH times the one before, up to `judge.batch_poll` (default 60 s): a batch done in a second
is collected within about two seconds, one that takes hours is looked at once a minute."""
RECORD_KIND = "batch"
RECORD_PREFIX = "batch:"
INTENT_PREFIX = "batch-file:"
CLAIM_KIND = "batch_claim"
CLAIM_PREFIX = "batch-claim:"
"""A request a run is submitting: claimed from before it reads the stored batches until its batch is
recorded, so that two runs on one cache never both submit it."""
ADOPT_LOOKS = 1000
"""Batches listed at most when looking for the batch a stopped run created but did not record."""
ENDED = ("completed", "failed", "expired", "cancelled")
INTENT_GRACE_SEC = 900.0
"""How long requests noted by a run on another machine are taken to be on their way into a batch
(an upload of a large file and the batch's creation, with the SDK's retries); on this machine, as
long as the run's process is alive."""
URLS = {"chat": "/v1/chat/completions", "embeddings": "/v1/embeddings"}
AZURE_URLS = {"chat": "/chat/completions", "embeddings": "/embeddings"}


def _live_intent(value: Mapping[str, Any], *, now: float) -> bool:
    """Whether the run that noted an uploaded file (or claimed requests) may still be submitting
    them: on this machine, whether its process is alive (an upload may take minutes); elsewhere,
    whether it noted them less than INTENT_GRACE_SEC ago. A stopped run's note is not live: its
    requests are asked again."""
    pid = value.get("pid")
    if value.get("host") == socket.gethostname() and isinstance(pid, int) and not isinstance(pid, bool):
        try:
            os.kill(pid, 0)
        except PermissionError:
            return True  # another user's process, alive
        except (OSError, OverflowError):
            return False
        return True
    noted = value.get("noted")
    return isinstance(noted, (int, float)) and now - noted < INTENT_GRACE_SEC


def batch_problem(settings: JudgeSettings, cache: JudgeCache | None) -> str | None:
    """Why these settings cannot judge in batches, or None."""
    if settings.litellm_chat is not None or settings.litellm_embedding is not None:
        return ("judging in batches goes through the OpenAI Batch API, which a model reached through litellm "
                "does not offer; judge directly (without --judge-batch / judge.batch)")
    if settings.budget_usd is not None:
        return ("a judge budget (--judge-budget / judge.budget) is not applied to batches, which are paid for "
                "as a whole; see the batch cost first with --estimate, then run without the budget")
    if cache is None or not cache.usable:
        why = f" ({cache.warning})" if cache is not None and cache.warning else ""
        return ("judging in batches needs the judge cache, which keeps the submitted batches and their "
                f"replies{why}; drop --no-cache, or judge directly without --judge-batch")
    return None


@dataclass
class _Batch:
    """A submitted batch, as stored in the cache (`record`) and as last seen."""

    id: str
    kind: str
    model: str
    keys: list[str]
    status: str = "validating"
    done: int = 0
    failed: int = 0
    shown: str = ""

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "model": self.model, "keys": self.keys}


class BatchJudging:
    """Runs the rounds of a batch run (see the module's docstring) for one `Judge.judge_results`."""

    def __init__(self, client: JudgeClient, *, on_progress: OnProgress | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        cache = client.cache
        problem = batch_problem(client.settings, cache)
        if problem is not None or cache is None:
            raise JudgeError(problem or "no judge cache")
        self.client = client
        self.settings = client.settings
        self.cache = cache
        self.replies = BatchReplies(cache)
        self._tell = on_progress or no_progress
        self._clock = clock
        self._sleep = sleep
        self.batch_ids: list[str] = []  # every batch this run submitted or collected, in order
        self._run = uuid.uuid4().hex  # names this run's claims on requests (`_claim`)
        self._looked_up: set[str] = set()  # keys looked up by `_answered_elsewhere`

    # -- the rounds

    def run(self, collecting_pass: Callable[[], None]) -> None:
        """Collect and submit until a collecting pass asks for nothing; BatchesPending when the
        run may wait no longer while batches run."""
        started = self._clock()
        while True:
            self.replies.deferred.clear()
            collecting_pass()
            wanted = dict(self.replies.deferred)
            if not wanted:
                return
            # claimed first, then the stored batches read: a run that submitted these requests
            # recorded its batch before it let its claims go, so it is seen here
            claimed = self._claim(list(wanted))
            try:
                running, noted = self._stored_batches()
                held = noted | {key for batch in running.values() for key in batch.keys}
                # another run's batch may have answered them (and been collected) since the pass asked
                answered = {key for key in claimed if key not in held and self._answered_elsewhere(key)}
                new = {key: request for key, request in wanted.items()
                       if key in claimed and key not in held and key not in answered}
                for batch in self._submit(new):
                    running[batch.id] = batch
            finally:
                self.cache.delete([CLAIM_PREFIX + key for key in claimed])
            elsewhere = noted | (wanted.keys() - claimed)  # another run is submitting these now
            mine = [batch for batch in running.values() if not wanted.keys().isdisjoint(batch.keys)]
            if not mine and answered:
                continue  # the next pass takes the replies
            if not mine and not wanted.keys().isdisjoint(elsewhere):
                # another run uploaded these requests and is creating their batch: look again soon
                self._check_wait(started, ())
                self._sleep(POLL_FIRST_SEC)
                continue
            if not mine:  # nothing could be submitted: the pass would ask the same again
                for key in wanted:
                    self._give_up(key, "the request could not be submitted in a batch", now=True)
                continue
            self._wait(mine, started)

    def _claim(self, keys: list[str]) -> set[str]:
        """The keys this run may submit: claimed in the cache at once, unless another run that is
        alive holds them (it is between reading the stored batches and recording its own)."""
        claim = {"run": self._run, "noted": time.time(), "host": socket.gethostname(), "pid": os.getpid()}

        def held(value: Any) -> bool:
            return isinstance(value, dict) and value.get("run") != self._run and _live_intent(value, now=time.time())

        claimed = self.cache.claim([CLAIM_PREFIX + key for key in keys], claim, kind=CLAIM_KIND, held=held)
        return {key.removeprefix(CLAIM_PREFIX) for key in claimed}

    def _answered_elsewhere(self, key: str) -> bool:
        """Whether a reply to `key` is in the cache now (another run's batch answered it after this
        round's pass asked): the next pass takes it instead of submitting the request. Once per key
        and run, so that a stored reply the pass cannot use never holds the request back for good."""
        if key in self._looked_up:
            return False
        self._looked_up.add(key)
        reply = self.cache.get(REPLY_PREFIX + key)
        if isinstance(reply, dict) and "body" in reply:
            return True
        direct = self.cache.get(key)
        return isinstance(direct, dict) and "failed" not in direct

    def _stored_batches(self) -> tuple[dict[str, _Batch], set[str]]:
        """The batches stored in the cache, by id, and the keys of files another run noted and may
        still be making a batch of (`_live_intent`): those requests are held too, not submitted again."""
        found = {}
        noted: set[str] = set()
        intents = []
        for entry, value in self.cache.values_of_kind(RECORD_KIND):
            try:
                batch = _Batch(str(value.get("id") or ""), str(value["kind"]), str(value["model"]),
                               [str(key) for key in value["keys"]])
            except (AttributeError, KeyError, TypeError):
                continue  # not one of ours: left alone
            if entry.startswith(INTENT_PREFIX):
                intents.append((entry, str(value.get("file")), batch, value))
            else:
                found[batch.id] = batch
        for key, file_id, batch, value in intents:
            adopted = self._adopt(file_id, batch, found)
            if adopted is not None:
                found[adopted.id] = adopted
            elif _live_intent(value, now=time.time()):
                noted.update(batch.keys)  # kept: its run records the batch, or a later look adopts it
                continue
            self.cache.delete([key])
        return found, noted

    def _adopt(self, file_id: str, batch: _Batch, found: Mapping[str, _Batch]) -> _Batch | None:
        """The batch made from an uploaded file whose run was stopped before it recorded the batch
        (the API's newest ADOPT_LOOKS batches are searched); None when there is none: its requests
        are asked again."""
        try:
            for looked, seen in enumerate(self.client.batch_sdk(batch.kind).batches.list(limit=100), start=1):
                if seen.input_file_id == file_id:
                    if seen.id in found:
                        return None
                    adopted = _Batch(seen.id, batch.kind, batch.model, batch.keys)
                    self.cache.put(RECORD_PREFIX + adopted.id, kind=RECORD_KIND, model=batch.model,
                                   value=adopted.record())
                    return adopted
                if looked >= ADOPT_LOOKS:
                    break
        except openai.OpenAIError as error:
            self._say(f"judge batches could not be listed ({self._describe(error)}); the requests of file "
                      f"{file_id} are asked again")
        return None

    # -- submitting

    def _submit(self, requests: Mapping[str, BatchRequest]) -> list[_Batch]:
        groups: dict[tuple[str, str], list[str]] = {}
        for key in sorted(requests):
            request = requests[key]
            if self.replies.submitted.get(key, 0) >= SUBMISSIONS:
                self._give_up(key, f"its batches did not answer this request, submitted {SUBMISSIONS} times",
                              now=True)
                continue
            groups.setdefault((request.kind, str(request.body.get("model"))), []).append(key)
        submitted = []
        for (kind, model), keys in groups.items():
            for chunk in self._files(kind, keys, requests):
                batch = self._submit_file(kind, model, chunk)
                if batch is not None:
                    submitted.append(batch)
        return submitted

    def _files(self, kind: str, keys: list[str], requests: Mapping[str, BatchRequest]) -> list[list[tuple[str, bytes]]]:
        """The JSONL lines of `keys`, split into files within MAX_REQUESTS and MAX_FILE_BYTES."""
        url = (AZURE_URLS if self.settings.is_azure else URLS)[kind]
        files: list[list[tuple[str, bytes]]] = [[]]
        size = 0
        for key in keys:
            line = (json.dumps({"custom_id": key, "method": "POST", "url": url, "body": requests[key].body},
                               ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
            if files[-1] and (len(files[-1]) >= MAX_REQUESTS or size + len(line) > MAX_FILE_BYTES):
                files.append([])
                size = 0
            files[-1].append((key, line))
            size += len(line)
        return [chunk for chunk in files if chunk]

    def _submit_file(self, kind: str, model: str, lines: list[tuple[str, bytes]]) -> _Batch | None:
        keys = [key for key, _ in lines]
        sdk = self.client.batch_sdk(kind)
        url = (AZURE_URLS if self.settings.is_azure else URLS)[kind]
        try:
            uploaded = sdk.files.create(file=("qareport-judge.jsonl", b"".join(line for _, line in lines),
                                              "application/jsonl"), purpose="batch")
            # recorded before it is created: a run stopped in between finds it by its file (`_adopt`)
            intent = {"file": uploaded.id, "kind": kind, "model": model, "keys": keys, "noted": time.time(),
                      "host": socket.gethostname(), "pid": os.getpid()}
            self.cache.put(INTENT_PREFIX + uploaded.id, kind=RECORD_KIND, model=model, value=intent)
            created = sdk.batches.create(input_file_id=uploaded.id, endpoint=url, completion_window=COMPLETION_WINDOW,
                                         metadata={"made_by": "qareport judge", "requests": str(len(keys))})
            batch = _Batch(created.id, kind, model, keys, status=str(created.status or "validating"))
            self.cache.put(RECORD_PREFIX + batch.id, kind=RECORD_KIND, model=model, value=batch.record())
            self.cache.delete([INTENT_PREFIX + uploaded.id])
        except openai.OpenAIError as error:
            why = f"the batch of {len(keys)} {kind} request(s) could not be submitted: {self._describe(error)}"
            self._say(f"judge batch ({kind}, {model}): {why}")
            for key in keys:
                self._give_up(key, why)
            return None
        for key in keys:
            self.replies.submitted[key] = self.replies.submitted.get(key, 0) + 1
        self.batch_ids.append(batch.id)
        self._say(f"judge batch {batch.id}: submitted {len(keys)} {kind} request(s) for {model}")
        return batch

    # -- waiting and collecting

    def _wait(self, batches: list[_Batch], started: float) -> None:
        interval = POLL_FIRST_SEC
        waiting = list(batches)
        for batch in waiting:
            if batch.id not in self.batch_ids:
                self.batch_ids.append(batch.id)
                self._say(f"judge batch {batch.id}: found from an earlier run ({len(batch.keys)} {batch.kind} "
                          "request(s)); waiting for it")
        while True:
            still = []
            for batch in waiting:
                if not self._look(batch):
                    still.append(batch)
            waiting = still
            if not waiting:
                return
            left = self._check_wait(started, tuple(batch.id for batch in waiting))
            self._sleep(interval if left is None else min(interval, left))
            interval = min(interval * POLL_GROWTH, max(self.settings.batch_poll, POLL_FIRST_SEC))

    def _check_wait(self, started: float, ids: tuple[str, ...]) -> float | None:
        """Seconds the run may still wait for batches (None: no limit); BatchesPending when none."""
        limit = self.settings.batch_wait
        left = None if limit is None else limit - (self._clock() - started)
        if left is not None and left <= 0:
            running = f"{len(ids)} judge batch(es) still running ({', '.join(ids)})" if ids else \
                "another run's judge batch still being created"
            raise BatchesPending(f"{running}: nothing was written; run the same command again to collect them "
                                 "(they are kept in the judge cache)", ids)
        return left

    def _look(self, batch: _Batch) -> bool:
        """Look at a batch once; collect it when it has ended. True when it needs no more looking."""
        try:
            seen = self.client.batch_sdk(batch.kind).batches.retrieve(batch.id)
        except openai.NotFoundError as error:  # gone: its requests are asked again in a new batch
            self.cache.delete([RECORD_PREFIX + batch.id])
            self._say(f"judge batch {batch.id}: not found ({self._describe(error)}); its requests are asked again")
            return True
        except openai.OpenAIError as error:
            why = f"judge batch {batch.id} could not be looked at: {self._describe(error)}"
            self._say(f"{why}; it is kept, and the same run again collects it")
            for key in batch.keys:
                self._give_up(key, why, now=True)
            return True
        counts = seen.request_counts
        batch.status = str(seen.status)
        batch.done = counts.completed if counts is not None else 0
        batch.failed = counts.failed if counts is not None else 0
        state = f"{batch.status}, {batch.done}/{len(batch.keys)} done" + (
            f", {batch.failed} failed" if batch.failed else "")
        if state != batch.shown:
            batch.shown = state
            self._say(f"judge batch {batch.id}: {state}")
        if batch.status not in ENDED:
            return False
        self._collect(batch, seen)
        return True

    def _collect(self, batch: _Batch, seen: Any) -> None:
        sdk = self.client.batch_sdk(batch.kind)
        answered: dict[str, str | None] = {}  # key -> None (a reply stored) or why the line failed
        lines = _Lines()
        try:
            for file_id in (seen.output_file_id, seen.error_file_id):
                if file_id:
                    self._read_lines(sdk.files.content(file_id).text, batch, answered, lines)
        except openai.OpenAIError as error:
            why = f"the results of judge batch {batch.id} could not be read: {self._describe(error)}"
            self._say(f"{why}; it is kept, and the same run again collects it")
            for key in batch.keys:
                if answered.get(key, "") is not None:
                    self._give_up(key, why, now=True)
            return
        if batch.status == "failed":
            errors = getattr(getattr(seen, "errors", None), "data", None) or []
            said = "; ".join(str(getattr(e, "message", "") or getattr(e, "code", "")) for e in errors[:3])
            left = f"judge batch {batch.id} failed" + (f": {said}" if said else "")
        elif batch.status == "expired":
            left = f"judge batch {batch.id} expired before this request was answered"
        elif batch.status == "completed":  # all answered, says the API: what came back falls short
            left = _short_output(batch, lines, sum(1 for key in batch.keys if key not in answered))
        else:
            left = f"judge batch {batch.id} was cancelled before this request was answered"
        for key in batch.keys:
            if key not in answered:
                self._give_up(key, left, now=batch.status in ("failed", "cancelled"))
            elif answered[key] is not None:
                self._give_up(key, str(answered[key]))
        self.cache.delete([RECORD_PREFIX + batch.id])
        kept = sum(1 for value in answered.values() if value is None)
        self._say(f"judge batch {batch.id}: {batch.status}; {kept} of {len(batch.keys)} repl(ies) collected"
                  + (f" ({left})" if batch.status == "completed" and len(answered) < len(batch.keys) else ""))

    def _read_lines(self, text: str, batch: _Batch, answered: dict[str, str | None], lines: _Lines) -> None:
        keys = set(batch.keys)
        for line in text.splitlines():
            if not line.strip():
                continue
            lines.seen += 1
            try:
                item = load_json(line)  # a line nested too deep is TooDeep, a ValueError
                key = item["custom_id"]
            except (ValueError, TypeError, KeyError):
                lines.unreadable += 1
                continue
            if key not in keys or answered.get(key, "") is None:
                continue
            response = item.get("response") or {}
            error = item.get("error")
            if not error and response.get("status_code") == 200 and isinstance(response.get("body"), dict):
                self.replies.store(key, batch.model, response["body"])
                answered[key] = None
                continue
            answered[key] = _line_failure(response, error)

    def _give_up(self, key: str, why: str, *, now: bool = False) -> None:
        """A request its batch did not answer: asked again in a new batch while SUBMISSIONS allow
        (not `now`), else its judgment is not judged."""
        if now or self.replies.submitted.get(key, 0) >= SUBMISSIONS:
            self.replies.fail(key, why)

    # -- the console

    def _say(self, line: str) -> None:
        self._tell(ProgressEvent("judging in batches", finished=f"qareport: {line}", always=True))

    def _describe(self, error: openai.OpenAIError) -> str:
        if isinstance(error, openai.APIStatusError):
            text = f"HTTP {error.status_code}: {error.message}"
        else:
            text = str(error) or type(error).__name__
        key = self.settings.api_key
        if key and len(key) > 3:
            text = text.replace(key, "***")
        return " ".join(text.split())


@dataclass(slots=True)
class _Lines:
    """The non-empty lines of a batch's files read so far, and those that were no batch line."""

    seen: int = 0
    unreadable: int = 0


def _short_output(batch: _Batch, lines: _Lines, missing: int) -> str:
    """Why a request of a completed batch has no line: its output is not JSON Lines, or lacks lines."""
    if lines.seen and lines.unreadable == lines.seen:
        return f"judge batch {batch.id} completed, but its output is not JSON Lines ({lines.seen} line(s) unreadable)"
    unreadable = f"; {lines.unreadable} line(s) unreadable" if lines.unreadable else ""
    return (f"judge batch {batch.id} completed, but its output lacks {missing} of {len(batch.keys)} replies"
            f"{unreadable}")


def _line_failure(response: Mapping[str, Any], error: Any) -> str:
    """Why a batch line has no usable reply, from its `error` or its response's status and body."""
    if isinstance(error, Mapping):
        return f"the batch could not answer this request ({error.get('code') or 'error'}: {error.get('message')})"
    status = response.get("status_code")
    body = response.get("body")
    message = body.get("error", {}).get("message") if isinstance(body, Mapping) and isinstance(
        body.get("error"), Mapping) else None
    return f"the batch could not answer this request (HTTP {status}" + (f": {message})" if message else ")")
