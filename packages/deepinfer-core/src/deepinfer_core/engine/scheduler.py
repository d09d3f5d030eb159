# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Scheduler: continuous batching under a token budget, chunked prefill, preemption by recompute.

One rule covers every kind of work (vLLM V1 formulation): each request owes
`num_tokens - num_computed_tokens` tokens of KV; a step grants each request some of them under
`max_num_batched_tokens`. A prompt's prefill, a chunk of it, one decode token and a re-prefill
after preemption are all "k tokens of this request". Device free: no torch.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import deque
from collections.abc import Callable

from deepinfer_core.engine.kv_cache import KVCacheManager
from deepinfer_core.engine.request import Request, RequestStatus
from deepinfer_core.engine.stop import check_token_stop


@dataclasses.dataclass(frozen=True)
class SchedulerConfig:
    """Limits of one step.

    Attributes:
        max_num_seqs: most running requests.
        max_num_batched_tokens: token budget of one step (prefill chunks + decode tokens).
        max_model_len: longest sequence, prompt + output, in tokens.
        enable_chunked_prefill: a prompt may be split across steps; else it is admitted only
            when it fits the budget whole.

    Raises:
        ValueError: a limit is not positive, or chunked prefill is off and the budget cannot hold
            a `max_model_len` prompt (the message names the field).
    """

    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    enable_chunked_prefill: bool = True

    def __post_init__(self) -> None:
        for name in ("max_num_seqs", "max_num_batched_tokens", "max_model_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not self.enable_chunked_prefill and self.max_num_batched_tokens < self.max_model_len:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= max_model_len "
                f"({self.max_model_len}) when enable_chunked_prefill is False")


@dataclasses.dataclass
class SchedulerOutput:
    """One step's plan.

    Attributes:
        scheduled: (request, num_new_tokens): running requests first (arrival order), then newly
            admitted ones (FCFS). Tokens `all_token_ids[num_computed_tokens : + num_new_tokens]`.
        preempted: requests whose blocks were freed this step (they wait to be recomputed).
        num_batched_tokens: sum of num_new_tokens.
        spec_token_ids: request id -> draft tokens scheduled after its known tokens (they are the
            last `len(drafts)` of its num_new_tokens).
    """

    scheduled: list[tuple[Request, int]]
    preempted: list[Request]
    num_batched_tokens: int
    spec_token_ids: dict[str, list[int]] = dataclasses.field(default_factory=dict)


class Scheduler:
    """Token-budget scheduler with FCFS admission and preemption of the latest arrival.

    Each step: (1) running requests, oldest first, get the tokens they owe (capped by the budget);
    when the KV pool runs dry, the most recently arrived running request is preempted: its blocks
    are freed, `num_computed_tokens` resets to 0 and it returns to the waiting queue at its
    arrival position (its emitted tokens stay; the recompute prefills prompt + output so far).
    (2) If nothing was preempted, waiting requests are admitted in arrival order while budget,
    `max_num_seqs` and blocks allow; the first one that does not fit stops admission. A request
    that is not ready (its structured-output grammar still compiling) is passed over and keeps
    its place.

    Args:
        config: the step limits.
        kv_manager: block-table manager over the shared pool.
        is_ready: whether a waiting request may be admitted; None admits all.
    """

    def __init__(self, config: SchedulerConfig, kv_manager: KVCacheManager,
                 is_ready: Callable[[Request], bool] | None = None) -> None:
        self.config = config
        self.kv = kv_manager
        self.is_ready = is_ready
        self.waiting: deque[Request] = deque()  # sorted by arrival
        self.running: list[Request] = []  # sorted by arrival
        self.requests: dict[str, Request] = {}
        self.num_preemptions = 0  # total, for tests and metrics

    def add_request(self, request: Request) -> None:
        """Queues a new request.

        Raises:
            ValueError: duplicate id, or the prompt is longer than `max_model_len` (names `prompt`).
        """
        if request.request_id in self.requests:
            raise ValueError(f"request_id {request.request_id!r} is already in use")
        if request.num_prompt_tokens > self.config.max_model_len:
            raise ValueError(f"prompt is {request.num_prompt_tokens} tokens, longer than max_model_len "
                             f"({self.config.max_model_len})")
        request.status = RequestStatus.WAITING
        self.requests[request.request_id] = request
        self._enqueue_waiting(request)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> SchedulerOutput:
        """Plans one step (see the class docstring); allocates the blocks it needs."""
        budget = self.config.max_num_batched_tokens
        chunked = self.config.enable_chunked_prefill
        scheduled: list[tuple[Request, int]] = []
        preempted: list[Request] = []
        spec: dict[str, list[int]] = {}

        i = 0
        while i < len(self.running) and budget > 0:
            request = self.running[i]
            num_new = request.num_tokens - request.num_computed_tokens
            if num_new <= 0 or (num_new > budget and not chunked):
                i += 1
                continue
            num_new = min(num_new, budget)
            drafts = self._fit_drafts(request, num_new, budget)
            while not self.kv.allocate_slots(request, num_new + len(drafts)):
                victim = self.running.pop()
                self._preempt(victim)
                preempted.append(victim)
                if victim is request:
                    break
            else:
                if drafts:
                    spec[request.request_id] = drafts
                scheduled.append((request, num_new + len(drafts)))
                budget -= num_new + len(drafts)
                i += 1

        # Admitting while preempting would only hand the freed blocks to a later arrival.
        if not preempted:
            not_ready: list[Request] = []
            while self.waiting and budget > 0 and len(self.running) < self.config.max_num_seqs:
                request = self.waiting[0]
                if self.is_ready is not None and not self.is_ready(request):
                    not_ready.append(self.waiting.popleft())
                    continue
                num_new = request.num_tokens - request.num_computed_tokens
                if num_new > budget:
                    if not chunked:
                        break
                    num_new = budget
                if not self.kv.allocate_slots(request, num_new):
                    break
                self.waiting.popleft()
                request.status = RequestStatus.RUNNING
                bisect.insort(self.running, request, key=_arrival)
                scheduled.append((request, num_new))
                budget -= num_new
            self.waiting.extendleft(reversed(not_ready))  # back in front, in arrival order

        return SchedulerOutput(scheduled, preempted, self.config.max_num_batched_tokens - budget, spec)

    @staticmethod
    def _fit_drafts(request: Request, num_new: int, budget: int) -> list[int]:
        """The request's drafts that ride along this step: only behind its last known token,
        trimmed to the budget; drafts that do not fit are dropped (never split across steps)."""
        drafts = request.spec_token_ids
        if not drafts:
            return drafts
        request.spec_token_ids = []
        if request.num_computed_tokens + num_new != request.num_tokens:
            request.spec_probs = None
            return []
        kept = drafts[:max(0, budget - num_new)]
        if len(kept) < len(drafts) and request.spec_probs is not None:
            request.spec_probs = request.spec_probs[:len(kept)]
        return kept

    def update_from_output(self, sched_out: SchedulerOutput, sampled: dict[str, list[int]]) -> list[Request]:
        """Advances `num_computed_tokens`, appends sampled tokens and finishes stopped requests.

        Args:
            sched_out: the plan the step executed.
            sampled: request id -> tokens sampled this step (only requests whose chunk reached
                the end of their known tokens).

        Returns:
            The requests that finished this step (their blocks are already freed).
        """
        finished: list[Request] = []
        max_model_len = self.config.max_model_len
        for request, num_new in sched_out.scheduled:
            if request.is_finished:  # aborted while the step ran
                continue
            request.num_computed_tokens += num_new
            tokens = sampled.get(request.request_id, ())
            num_drafts = len(sched_out.spec_token_ids.get(request.request_id, ()))
            if num_drafts:
                # Accepted drafts + one bonus/correction token came back; the KV of rejected
                # drafts is stale: roll num_computed_tokens and the block table back.
                request.num_computed_tokens -= num_drafts - (len(tokens) - 1)
                self.kv.trim(request, request.num_computed_tokens + 1)
            for token_id in tokens:
                request.append_output_token(token_id)
                if check_token_stop(request, max_model_len):
                    finished.append(request)
                    break
        if finished:
            for request in finished:
                self.kv.free(request)
                del self.requests[request.request_id]
            self.running = [r for r in self.running if not r.is_finished]
        return finished

    def finish(self, request_id: str, status: RequestStatus = RequestStatus.FINISHED_ABORTED) -> Request | None:
        """Ends a request early (abort or error), freeing its blocks.

        Returns:
            The request, or None if it is unknown or already finished.
        """
        request = self.requests.pop(request_id, None)
        if request is None:
            return None
        if request.status == RequestStatus.RUNNING:
            self.running.remove(request)
        else:
            self.waiting.remove(request)
        self.kv.free(request)
        request.status = status
        return request

    def abort(self, request_id: str) -> Request | None:
        """Aborts a request (finish reason "abort"); see `finish`."""
        return self.finish(request_id, RequestStatus.FINISHED_ABORTED)

    def _preempt(self, request: Request) -> None:
        self.kv.free(request)
        request.spec_token_ids, request.spec_probs = [], None
        request.num_computed_tokens = 0
        request.status = RequestStatus.PREEMPTED
        request.num_preemptions += 1
        self.num_preemptions += 1
        self._enqueue_waiting(request)

    def _enqueue_waiting(self, request: Request) -> None:
        # New arrivals land at the end; a preempted request goes back to its arrival position.
        if not self.waiting or self.waiting[-1].arrival < request.arrival:
            self.waiting.append(request)
        else:
            self.waiting.insert(bisect.bisect_right(self.waiting, request.arrival, key=_arrival), request)


def _arrival(request: Request) -> int:
    return request.arrival
