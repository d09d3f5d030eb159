# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""StructuredOutputManager: the engine's side of structured output.

Per step (see `EngineCore.step`): `poll` turns finished compiles into GrammarStates (or errors);
the scheduler admits a structured request only once `is_ready`; `start_fill` writes the whole
batch's masks in a background thread while the forward pass runs (a mask depends only on the
tokens accepted so far; llguidance fills without holding the GIL), and the sampler applies them
with `ops.apply_token_bitmask`; `accept_step` consumes each sampled token. The asynchronous engine
leaves most tokens unconsumed when it reads them: `start_fill` consumes them in the mask thread,
just before the fill, so neither sits on the engine thread.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from deepinfer_core.structured.backend import one_line as _one_line
from deepinfer_core.structured.grammar_cache import GrammarCache, result_of
from deepinfer_core.structured.masks import FillJob, InflightIds, TokenBitmask
from deepinfer_core.structured.state import GrammarState
from deepinfer_core.structured.switch_interval import SwitchIntervalLease

if TYPE_CHECKING:
    from deepinfer_core.engine.request import Request
    from deepinfer_core.structured.backend import CompiledGrammar, GuidanceBackend
    from deepinfer_core.structured.params import StructuredOutputs

DEFAULT_TIMEOUT_S = 10.0
MAX_MOVES_PER_FILL = 16  # matcher moves between templates per mask fill (each replays its tokens)


@dataclasses.dataclass
class _Pending:
    future: concurrent.futures.Future[CompiledGrammar]
    kind: str
    deadline: float  # time.monotonic() seconds


class StructuredOutputManager:
    """Compiles grammars off the engine thread and keeps one GrammarState per structured request.

    Args:
        backend_factory: builds the backend on the first structured request (it needs the
            tokenizer; building it costs a fraction of a second).
        timeout_s: longest a request waits for its grammar before it fails alone.
        max_workers: compile threads.
        max_cached_grammars: compiled grammars kept by key.
    """

    def __init__(self, backend_factory: Callable[[], GuidanceBackend], timeout_s: float = DEFAULT_TIMEOUT_S,
                 max_workers: int = 2, max_cached_grammars: int = 256) -> None:
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.timeout_s = timeout_s
        self._backend_factory = backend_factory
        self._backend: GuidanceBackend | None = None
        self._backend_lock = threading.Lock()  # compile threads may ask for it at once
        self.cache: GrammarCache[CompiledGrammar] = GrammarCache(self._compile, max_workers, max_cached_grammars)
        self._pending: dict[str, _Pending] = {}
        self._states: dict[str, GrammarState] = {}
        self._buffers: list[torch.Tensor | None] = [None, None]
        self._flip = 0
        self._fill_thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="deepinfer-mask")
        self._job: FillJob | None = None                 # the last fill submitted
        self._zombies: list[GrammarState] = []           # released while a fill used their matcher
        self._zombie_lock = threading.Lock()            # the mask thread reaps when a fill ends
        self._lease = SwitchIntervalLease()              # the lowered switch interval, while grammars live
        weakref.finalize(self, self._lease.set, False)

    @property
    def backend(self) -> GuidanceBackend:
        """The backend, built on first use."""
        with self._backend_lock:
            if self._backend is None:
                self._backend = self._backend_factory()
            return self._backend

    def _compile(self, spec: StructuredOutputs) -> CompiledGrammar:
        return self.backend.compile(spec)

    def compile_now(self, spec: StructuredOutputs) -> None:
        """Compiles `spec` (or finds it cached), waiting up to `timeout_s`.

        Raises:
            ValueError: the spec cannot be compiled in time; the message names the field.
        """
        self.cache.get(spec, self.timeout_s)

    def add_request(self, request: Request) -> None:
        """Starts compiling the request's grammar (a no-op for unconstrained requests)."""
        spec = request.sampling_params.structured_outputs
        if spec is not None:
            self._pending[request.request_id] = _Pending(self.cache.submit(spec), spec.kind,
                                                         time.monotonic() + self.timeout_s)

    def poll(self) -> list[tuple[str, str]]:
        """Moves finished compiles into GrammarStates.

        Returns:
            (request id, error message) of requests whose grammar failed or timed out; they are
            forgotten here and the caller ends them.
        """
        failed = []
        now = time.monotonic()
        for request_id, pending in list(self._pending.items()):
            if not pending.future.done() and now < pending.deadline:
                continue
            del self._pending[request_id]
            try:
                grammar = result_of(pending.future, pending.kind, 0.0)
            except ValueError as exc:
                message = str(exc)
                if not pending.future.done():
                    message = f"{pending.kind}: grammar compilation did not finish within {self.timeout_s:g} s"
                failed.append((request_id, message))
                continue
            self._states[request_id] = GrammarState(grammar)
            self._switch_interval(True)
        return failed

    def _switch_interval(self, active: bool) -> None:
        """Lowers the interpreter's thread switch interval while structured requests run, and
        restores it when none is left (in any engine of the process).

        The mask thread needs the GIL for a few short stretches of each fill (between
        llguidance's GIL-free calls). With CPython's default interval (5 ms) a thread waiting for
        the GIL gets it only when the busy engine thread is forced to drop it, so a fill that
        needs ~1 ms of work finished only once the engine thread blocked on it (measured on the
        H200 host: wait ~= fill). Process-wide, hence scoped to the requests that need it.
        """
        self._lease.set(active)

    def has_pending(self) -> bool:
        """Some request still waits for its grammar."""
        return bool(self._pending)

    def wait(self) -> None:
        """Blocks until a pending compile finishes or the earliest deadline passes."""
        if self._pending:
            timeout = max(0.0, min(p.deadline for p in self._pending.values()) - time.monotonic())
            concurrent.futures.wait([p.future for p in self._pending.values()], timeout,
                                    concurrent.futures.FIRST_COMPLETED)

    def is_ready(self, request: Request) -> bool:
        """False while the request's grammar is still compiling (the scheduler skips it)."""
        return request.request_id not in self._pending

    def state(self, request_id: str) -> GrammarState | None:
        """The request's GrammarState (None if unconstrained or not compiled yet)."""
        return self._states.get(request_id)

    def start_fill(self, requests: list[Request], inflight: InflightIds | None = None) -> FillJob | None:
        """Starts consuming the rows' unseen tokens and filling their masks in the mask thread;
        None when no row carries a grammar.

        Tokens already in the requests' `output_token_ids` are read here, on the calling thread;
        a row listed in `inflight` also consumes its in-flight token, read by the mask thread
        once the device has copied it to the host. Rows whose grammar is in an error state are
        skipped. The caller must not accept tokens for these rows or poll until the job is done.
        """
        if not any(r.request_id in self._states for r in requests):
            return None
        self._reap()
        rows = {} if inflight is None else inflight.rows
        known: dict[str, list[int]] = {}
        reads: dict[str, int] = {}
        for request in requests:
            state = self._states.get(request.request_id)
            if state is None or state.matcher.is_error():
                continue
            hit = rows.get(request.request_id)
            if hit is not None and state.num_tokens > hit[1]:
                known[request.request_id] = []   # its in-flight token was consumed already (synchronous sampler)
                continue
            end = len(request.output_token_ids) if hit is None else hit[1]
            known[request.request_id] = request.output_token_ids[state.num_tokens:end]
            if hit is not None:
                reads[request.request_id] = hit[0]
        job = FillJob(set(reads))
        job.future = self._fill_thread.submit(self._run_job, job, list(requests), known, reads,
                                              None if inflight is None else inflight)
        self._job = job
        job.future.add_done_callback(lambda _: self._reap())
        return job

    def _run_job(self, job: FillJob, requests: list[Request], known: dict[str, list[int]],
                 reads: dict[str, int], inflight: InflightIds | None) -> TokenBitmask | None:
        try:
            ids = []
            if reads:
                if inflight.ready is not None:
                    inflight.ready.synchronize()
                ids = inflight.host.tolist()
            by_id = {r.request_id: r for r in requests}
            feeds = [(by_id[rid], tokens + ([ids[reads[rid]]] if rid in reads else [])) for rid, tokens in known.items()]
            job.errors.update(self.accept_step([(request, tokens) for request, tokens in feeds if tokens]))
        finally:
            job.mark_consumed()
        return self._fill(requests, [r for r in requests if r.request_id in known and r.request_id not in job.errors],
                          job.errors)

    def _unconsumed(self, requests: list[Request]) -> dict[str, list[int]]:
        """Request id -> its output tokens that its grammar has not consumed yet."""
        missing = {}
        for request in requests:
            state = self._states.get(request.request_id)
            if state is not None and state.num_tokens < len(request.output_token_ids):
                missing[request.request_id] = request.output_token_ids[state.num_tokens:]
        return missing

    def fill_bitmask(self, requests: list[Request], unconsumed: dict[str, list[int]] | None = None
                     ) -> TokenBitmask | None:
        """Consumes the rows' unconsumed tokens, then writes the next-token masks of the
        structured requests among one step's sampling rows (synchronously; `start_fill` runs
        the same in the mask thread).

        Args:
            requests: the step's sampling requests, in row order.
            unconsumed: request id -> tokens to consume first (default: read from the requests'
                `output_token_ids` now).

        Returns:
            The masks (with the requests whose grammar rejected a token), or None when no row
            carries a grammar.
        """
        if unconsumed is None:
            unconsumed = self._unconsumed(requests)
        errors = self.accept_step([(r, unconsumed[r.request_id]) for r in requests if r.request_id in unconsumed])
        return self._fill(requests, [r for r in requests if r.request_id in self._states
                                     and r.request_id not in errors], errors)

    def _fill(self, requests: list[Request], masked: list[Request], errors: dict[str, str]) -> TokenBitmask | None:
        """Fills the masks of the `masked` rows among `requests` (row order)."""
        wanted = {id(r) for r in masked}
        rows = []
        moves = MAX_MOVES_PER_FILL
        states = [self._states.get(r.request_id) for r in masked]
        grammars = {id(state.grammar): state.grammar for state in states if state is not None}
        unbalanced = {key for key, grammar in grammars.items() if not grammar.balanced}   # once per fill
        for b, request in enumerate(requests):
            state = self._states.get(request.request_id)
            if state is not None and id(request) in wanted:
                if moves > 0 and id(state.grammar) in unbalanced and self._rebalance(state):
                    moves -= 1
                rows.append((id(state.grammar), state.shard, b, state.matcher))
        if not rows and not errors:
            return None
        rows.sort(key=lambda row: row[:3])   # rows of one template together (one thread each)
        width = self.backend.bitmask_width
        # Two buffers used in turn: a step's mask may still be in flight to the device (a
        # non-blocking copy) while the next step's masks are written.
        self._flip ^= 1
        buffer = self._buffers[self._flip]
        if buffer is None or buffer.shape[0] < len(requests):
            buffer = self._buffers[self._flip] = torch.empty((max(len(requests), 8), width), dtype=torch.int32,
                                                             pin_memory=torch.cuda.is_available())
        bitmask = buffer[:len(requests)]
        self.backend.fill_bitmask([(matcher, b) for _, _, b, matcher in rows], bitmask)
        return TokenBitmask(bitmask, torch.tensor(sorted(b for _, _, b, _ in rows), dtype=torch.int64), errors)

    def accept_through(self, items: list[tuple[Request, int]]) -> dict[str, str]:
        """Consumes each request's output tokens before index `end` that its grammar has not
        consumed yet (`accept_step` on the missing tokens).

        Returns:
            request id -> error message, for requests whose grammar rejected a token.
        """
        pairs = []
        for request, end in items:
            state = self._states.get(request.request_id)
            if state is not None and state.num_tokens < end:
                pairs.append((request, request.output_token_ids[state.num_tokens:end]))
        return self.accept_step(pairs)

    def accept(self, request: Request, token_ids: list[int]) -> str | None:
        """Consumes a request's newly sampled tokens.

        Returns:
            None, or an error message (naming the field) if the grammar rejected a token.
        """
        state = self._states.get(request.request_id)
        if state is None:
            return None
        if state.accept(token_ids):
            request.grammar_terminated = state.is_terminated
            return None
        return self._rejected(request, token_ids, state)

    def accept_step(self, sampled: list[tuple[Request, list[int]]]) -> dict[str, str]:
        """`accept` for one step's requests; single tokens are consumed in parallel threads.

        Returns:
            request id -> error message, for requests whose grammar rejected a token.
        """
        errors = {}
        singles = []
        for request, token_ids in sampled:
            state = self._states.get(request.request_id)
            if state is not None and len(token_ids) == 1:
                singles.append((request, token_ids, state))
            elif state is not None:
                if state.accept(token_ids):
                    request.grammar_terminated = state.is_terminated
                else:
                    errors[request.request_id] = self._rejected(request, token_ids, state)
        singles.sort(key=lambda single: (id(single[2].grammar), single[2].shard))   # one template per thread
        oks = self.backend.consume([(state.matcher, ids[0]) for _, ids, state in singles]) if singles else []
        for (request, token_ids, state), ok in zip(singles, oks):
            if ok:   # False exactly when the matcher is in an error state
                state.consumed(token_ids[0])
                if token_ids[0] == request.eos_token_id:   # the only token `grammar_terminated` is read for
                    request.grammar_terminated = state.is_terminated
            else:
                errors[request.request_id] = self._rejected(request, token_ids, state)
        return errors

    @staticmethod
    def _rejected(request: Request, token_ids: list[int], state: GrammarState) -> str:
        kind = request.sampling_params.structured_outputs.kind
        return f"{kind}: the grammar rejected token(s) {token_ids}: {_one_line(state.error or 'no error message')}"

    def release(self, request_id: str) -> None:
        """Forgets a finished or aborted request. While a fill runs (it may still use the
        matcher), its template slot is freed only once the fill is done."""
        self._pending.pop(request_id, None)
        state = self._states.pop(request_id, None)
        if state is not None:
            with self._zombie_lock:
                self._zombies.append(state)
        self._reap()
        if not self._states:
            self._switch_interval(False)

    def _reap(self) -> None:
        """Frees the template slots of released requests once no fill runs (called by the engine
        thread, and by the mask thread when a fill ends)."""
        with self._zombie_lock:
            if not self._zombies or (self._job is not None and not self._job.done()):
                return
            zombies, self._zombies = self._zombies, []
        for state in zombies:
            state.grammar.release(state.shard)

    @staticmethod
    def _rebalance(state: GrammarState) -> bool:
        """Moves the request's matcher to a less-loaded template when that evens out the load
        (see `CompiledGrammar.move`); True when it moved."""
        moved = state.grammar.move(state.shard)
        if moved is None:
            return False
        matcher, shard = moved
        old = state.shard
        if state.move_to(matcher, shard):
            return True
        state.grammar.release(shard)          # the replay failed: undo the bookkeeping
        state.grammar.add_live(old)
        return False

    def close(self) -> None:
        """Stops the compile and mask threads (running compiles finish in the background)."""
        self.cache.close()
        self._fill_thread.shutdown(wait=False)
        self._switch_interval(False)
