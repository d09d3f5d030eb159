# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Asynchronous scheduling: step N+1 is scheduled and launched before step N's tokens reach the host.

The loop of `AsyncEngineCore.step`:
  1. schedule step N+1 while step N may still run on the device; a request sampled in step N
     already holds a placeholder for that token (its count is known, its id is not);
  2. launch the forward pass of step N+1: the placeholders' ids are gathered on the device from
     step N's sampled tensor (`ScheduledChunk.fill_row`);
  3. while it runs, wait for step N's ids only (a pinned copy behind an event) and resolve them:
     placeholders filled, stop tokens, grammar acceptance, outputs;
  4. sample step N+1: penalties and logprobs like the synchronous sampler; unless a row needs
     penalties or logprobs, the ids stay on the device and a non-blocking copy to pinned host
     memory starts. A step with grammar rows defers its draw instead (see "Grammar rows");
  5. advance the scheduler as if step N+1 were done (placeholders for its samples; length limits
     are known without the ids). Host work for step N overlaps device work for step N+1.

Grammar rows: step N+1's masks need step N's ids. Just before step N+1 is launched (2), the
mask thread is given step N+1's sampling rows; it waits for step N's ids to reach the host,
consumes them in the grammars and fills step N+1's masks, while this thread launches step N+1,
resolves step N, returns its outputs and schedules step N+2. Step N+1's draw is deferred until
just before step N+2 is launched (step N+2's inputs need its ids): by then the masks are
normally filled. Rows stopped while resolving step N are sampled too and their ids dropped (the
masks were laid out for every row). A structured token is reported only once its grammar has
consumed it, as in the synchronous loop: tokens the mask thread consumes are held back one step
(structured output streams one step late), except a token that ends its request (EOS, a stop
token id, a length limit): for it step 3 waits for the consume phase, so that the grammar's
termination or a rejection is known before the request is reported. A rejected token is never
reported: the request fails with the error, in an output that may carry the valid tokens before
it, as in the synchronous loop; a length limit that ended the request meanwhile is overridden by
the error, and `abort` of such a request drops its in-flight last token.

A request that stops on a token in step N was already launched in step N+1: that extra token is
computed and dropped (its KV blocks are freed; the device finishes writing them before any later
step can reuse them, since all steps run in order on one stream). Output is identical to the
synchronous loop. Steps with penalties or logprobs are sampled by the full `Sampler` (its host
copy of the ids waits for step N+1's forward, so those steps overlap less);
steps that verify drafts or return prompt logprobs run synchronously (`EngineCore._run`), after
draining the in-flight step. A speculative engine whose step carries no drafts overlaps too: the
proposer observes the step's target features as usual, and is asked for the next drafts at
once while it declares idle rounds (`Proposer.idle_rounds`, e.g. DSpark pausing under load);
otherwise the next step first waits for the ids and then proposes. A step in a dormant stretch
(`Proposer.dormant_rounds`, `DormantSteps`) asks the proposer nothing at all.
"""

from __future__ import annotations

import concurrent.futures

import torch

from deepinfer_core.engine.engine_core import EngineCore, EngineCoreOutput
from deepinfer_core.engine.inflight import DeferredSample, InflightStep
from deepinfer_core.engine.request import Request, RequestStatus
from deepinfer_core.engine.scheduler import SchedulerOutput
from deepinfer_core.engine.stop import stop_token_rule
from deepinfer_core.executor.transfer import to_device
from deepinfer_core.structured.masks import FillJob, InflightIds

PLACEHOLDER = -1


class AsyncEngineCore(EngineCore):
    """`EngineCore` with asynchronous scheduling (see the module docstring); same constructor."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._inflight: InflightStep | None = None
        self._deferred: DeferredSample | None = None   # the in-flight step, while its masks are filled
        self._mask_errors: dict[str, tuple[Request | None, str]] = {}  # grammars that rejected a token in the mask thread
        self._held: dict[str, int] = {}                # request id -> token waiting for the mask thread's consume
        self._pending_logprobs: dict[str, object] = {}  # request id -> logprobs of its in-flight token
        self.num_overlapped_steps = 0  # steps launched before the previous one was read (metrics, tests)
        self._propose_due = False  # a speculative step overlapped: propose once the ids are known

    def has_unfinished(self) -> bool:
        return self._inflight is not None or self._deferred is not None or super().has_unfinished()

    @torch.inference_mode()
    def step(self) -> list[EngineCoreOutput]:
        """Launches the next step and returns the outputs of the previous one (see module docstring)."""
        outputs = self._fail_grammars()
        if self._propose_due:  # drafts need the real ids of every running request
            self._propose_due = False
            self._drain(outputs)
            self._propose(outputs)
        sched = self._schedule()
        if sched.scheduled and self._overlappable(sched):
            self._overlapped_step(sched, outputs)
            return list(outputs.values())
        if self._inflight is not None or self._deferred is not None:  # the step below needs every id on the host
            self._drain(outputs)
            sched.scheduled = [(r, n) for r, n in sched.scheduled if not r.is_finished]
        if not sched.scheduled:
            if not outputs and self.structured is not None and self.structured.has_pending():
                self.structured.wait()
            elif not outputs and self.scheduler.has_unfinished():
                raise RuntimeError("scheduler made no progress with unfinished requests")
            return list(outputs.values())
        self._run(sched, outputs)
        return list(outputs.values())

    def _overlappable(self, sched: SchedulerOutput) -> bool:
        if sched.spec_token_ids:
            return False
        return all(req.sampling_params.prompt_logprobs is None for req, _ in sched.scheduled)

    def _drain(self, outputs: dict[str, EngineCoreOutput]) -> None:
        """Resolves the in-flight step, if any (every token id is then on the host)."""
        self._finish_deferred(outputs)
        self._fail_masked(outputs)
        if self._inflight is not None:
            previous, self._inflight = self._inflight, None
            self._resolve(previous, outputs)

    def _propose(self, outputs: dict[str, EngineCoreOutput]) -> None:
        """Asks the proposer for the next step's drafts; requests it failed end alone."""
        for request_id, error in self.speculative.propose(self.scheduler.running).items():
            out = outputs.setdefault(request_id, EngineCoreOutput(request_id, []))
            out.error = error
            if out.finish_reason is None:
                self._finish_with_error(out)

    def _after_speculative_overlap(self, sched: SchedulerOutput, model_out, outputs: dict[str, EngineCoreOutput]
                                   ) -> None:
        """The proposer's side of an overlapped step without drafts: features now, drafts when due."""
        self._observe(sched, model_out, outputs)
        if self.speculative.idle_rounds() > 0:
            self._propose(outputs)   # returns no drafts: the placeholders are never read
        else:
            self._propose_due = True

    def _observe(self, sched: SchedulerOutput, model_out, outputs: dict[str, EngineCoreOutput]) -> None:
        """Hands the proposer the features of an overlapped step without drafts (positions are
        known without the ids); requests it failed end alone."""
        if model_out.aux_hidden is None:
            return
        failed = self.speculative.observe(sched.scheduled, {}, {}, model_out.aux_hidden, model_out.cu_seqlens)
        for request_id, error in failed.items():  # its in-flight token is dropped when resolved
            out = outputs.setdefault(request_id, EngineCoreOutput(request_id, []))
            out.error = error
            if out.finish_reason is None:
                self._finish_with_error(out)

    def _finish_deferred(self, outputs: dict[str, EngineCoreOutput]) -> None:
        """Draws a deferred step once its masks are filled; it becomes the in-flight step. The
        tokens held for the mask thread's consume are reported now (with their error, if any,
        by `_fail_masked`)."""
        if self._deferred is None:   # held tokens always come with a deferred step; never lose one
            self._report_held(outputs)
            return
        step, self._deferred = self._deferred, None
        masks = step.filling.result()
        self._report_held(outputs, masks.errors if masks is not None else {})
        if masks is not None and masks.errors:   # failed once the next step is launched
            by_id = {r.request_id: r for r in step.requests}
            self._mask_errors.update({rid: (by_id.get(rid), error) for rid, error in masks.errors.items()})
        ids = step.draw(masks)
        self._inflight = InflightStep(step.requests, step.out_index, ids, *self._to_host(ids), accept=True)

    def _report_held(self, outputs: dict[str, EngineCoreOutput], rejected: dict[str, str] | None = None) -> None:
        """Reports the held tokens, except those their grammar rejected (never sent)."""
        for request_id, token in self._held.items():
            if rejected is None or request_id not in rejected:
                outputs.setdefault(request_id, EngineCoreOutput(request_id, [])).new_token_ids.append(token)
        self._held = {}

    def _start_fill(self, sampling: list[Request], previous: InflightStep | None) -> FillJob | None:
        """Starts the mask thread on the coming step's grammar rows (consuming the previous step's
        ids as they arrive); None when no row has a grammar or a row needs the synchronous
        sampler (penalties, logprobs: that path fills its masks itself)."""
        if self.structured is None or not sampling or not all(self._on_device(r) for r in sampling):
            return None
        inflight = None
        if previous is not None:
            wanted = {id(r) for r in sampling}
            inflight = InflightIds(previous.host, previous.ready, {
                req.request_id: (b, index) for b, (req, index) in enumerate(zip(previous.requests, previous.out_index))
                if id(req) in wanted})
        return self.structured.start_fill(sampling, inflight)

    @staticmethod
    def _on_device(request: Request) -> bool:
        """Whether the request's row is sampled on the device (no penalties, no logprobs)."""
        return not (request.sampling_params.has_penalties or request.sampling_params.logprobs is not None)

    def abort(self, request_id: str) -> bool:
        """Aborts a request, also one a length limit ended whose last token is still in flight
        (that token is then dropped, not reported)."""
        for step in (self._inflight, self._deferred):
            for req in () if step is None else step.requests:
                if req.request_id == request_id and req.status == RequestStatus.FINISHED_LENGTH:
                    req.status = RequestStatus.FINISHED_ABORTED
                    self._release(request_id)
                    return True
        return super().abort(request_id)

    def _release(self, request_id: str) -> None:
        self._held.pop(request_id, None)   # an ended request's held token is never reported
        super()._release(request_id)

    def _fail_masked(self, outputs: dict[str, EngineCoreOutput]) -> None:
        """Ends the requests whose grammar rejected a token in the mask thread; their ids in the
        in-flight step are dropped when it resolves. Requests already reported as ended are left
        alone; one that a length limit ended while its last token is still in flight fails too."""
        for request_id, (req, error) in self._mask_errors.items():
            if self.structured.state(request_id) is None:   # released: its end was reported
                continue
            self._fail(req, outputs.setdefault(request_id, EngineCoreOutput(request_id, [])), error)
        self._mask_errors = {}

    def _fail(self, req: Request | None, out: EngineCoreOutput, error: str) -> None:
        """Fails a request with `error`, also one a length limit ended while its last token is
        still in flight (that token is then dropped when resolved)."""
        out.error = error
        if out.finish_reason is not None:
            return
        if req is not None and req.status == RequestStatus.FINISHED_LENGTH:
            req.status = RequestStatus.FINISHED_ERROR   # its blocks are already free
            self._release(req.request_id)
            out.finish_reason = RequestStatus.FINISHED_ERROR.value
        else:
            self._finish_with_error(out)

    def _overlapped_step(self, sched: SchedulerOutput, outputs: dict[str, EngineCoreOutput]) -> None:
        previous = self._inflight or self._deferred
        rows = {} if previous is None else {id(r): b for b, r in enumerate(previous.requests)}
        chunks = []
        for req, n in sched.scheduled:
            chunk = self._chunk(req, n, [])
            if chunk.token_ids[-1] == PLACEHOLDER:
                chunk.fill_row = rows[id(req)]
            chunks.append(chunk)
        self._finish_deferred(outputs)   # the masks were filled while this thread scheduled
        previous = self._inflight
        sampling_rows = [r for (r, _), c in zip(sched.scheduled, chunks) if c.sample]
        # Before the launch: the job waits for step N's ids while this thread launches step N+1.
        job = self._start_fill(sampling_rows, previous)
        try:
            fill_from = None if previous is None else previous.sampled
            dormant = self._dormant({})
            quiet = dormant and self.speculative.dormant.features   # a quiet stretch keeps the features
            if self.speculative is not None and not quiet and (dormant or not self.speculative.wants_features()):
                model_out = self.runner.execute_model(chunks, fill_from=fill_from, features=False)
            else:
                model_out = self.runner.execute_model(chunks, fill_from=fill_from)
        except BaseException:
            if job is not None:   # the caller may step again: no fill may still hold the grammars then
                concurrent.futures.wait([job.future])
            raise
        self._inflight = None
        self._fail_masked(outputs)
        if previous is not None:  # host work for step N while the device runs step N+1
            self.num_overlapped_steps += 1
            self._dormant_step = dormant   # a batch ending here: its stretch is reported by `ran` below
            try:
                self._resolve(previous, outputs, job)
            finally:
                self._dormant_step = False
        live = [(b, req) for b, req in enumerate(sampling_rows) if not req.is_finished]  # stopped in step N
        logits = model_out.logits
        if job is not None:   # the masks are laid out for every row: sample all, drop the stopped ones
            live = list(enumerate(sampling_rows))
        elif len(live) != len(sampling_rows):
            logits = logits[to_device([b for b, _ in live], torch.int64, logits.device)]  # no device sync
        sampling = [req for _, req in live]
        out_index = [req.num_output_tokens for req in sampling]
        sampled = self._sample(logits, sampling, out_index, outputs, job)
        scheduled = [(r, n) for r, n in sched.scheduled if not r.is_finished]
        for req in self.scheduler.update_from_output(
                SchedulerOutput(scheduled, sched.preempted, sched.num_batched_tokens),
                {r.request_id: [PLACEHOLDER] for r in sampling if not r.is_finished}):
            # Finished by a length limit: reported when its last token is resolved, but its blocks
            # and block-table row are free now (the launched step already read them), and the
            # proposer hears of it now (a request admitted in its place is not taken for it).
            self._release_row(req.request_id)
            if self.speculative is not None:
                self.speculative.forget(req.request_id)
        if isinstance(sampled, DeferredSample):
            self._deferred = sampled
        else:
            self._inflight = sampled
        if dormant:
            if quiet:   # a request the proposer fails here is reported by `ran`, as a dormant step's end
                self._dormant_step = True
                try:
                    self._observe(sched, model_out, outputs)
                finally:
                    self._dormant_step = False
            self.speculative.dormant.ran(len(self.scheduler.running))
        elif self.speculative is not None:
            self._after_speculative_overlap(sched, model_out, outputs)

    def _sample(self, logits: torch.Tensor, sampling: list[Request], out_index: list[int],
                outputs: dict[str, EngineCoreOutput], job: FillJob | None) -> InflightStep | DeferredSample:
        """Samples the step's rows: on the device unless a row needs penalties or logprobs; a
        step whose grammar rows the mask thread is filling (`job`) is deferred until its masks
        are done (see the module docstring)."""
        device = logits.device
        if not sampling:
            ids = torch.empty(0, dtype=torch.int64, device=device)
        elif all(self._on_device(r) for r in sampling):
            draw = self.sampler.prepare_ids(logits, sampling)
            if job is None and self.structured is not None:  # e.g. a row that needed the synchronous
                job = self.structured.start_fill(sampling)     # sampler stopped in step N: fill now
            if job is not None:
                return DeferredSample(sampling, out_index, draw, job)
            ids = draw(None)
        else:  # penalties, logprobs: the synchronous sampler on this step's rows
            masks = None
            if self.structured is not None:
                filling = self.structured.start_fill(sampling)
                masks = filling.result() if filling is not None else None
            result = self.sampler(logits, sampling, masks)
            for b, req in enumerate(sampling):
                if result.logprobs[b] is not None:
                    self._pending_logprobs[req.request_id] = result.logprobs[b]
            ids = torch.tensor(result.token_ids, dtype=torch.int64).to(device)
            if self.structured is not None and masks is not None:
                errors = dict(masks.errors)
                errors.update(self.structured.accept_step([(r, [t]) for r, t in zip(sampling, result.token_ids)
                                                           if r.request_id not in masks.errors]))
                for request_id, error in errors.items():
                    out = outputs.setdefault(request_id, EngineCoreOutput(request_id, []))
                    out.error = error
                    self._finish_with_error(out)
        return InflightStep(sampling, out_index, ids, *self._to_host(ids))

    @staticmethod
    def _to_host(ids: torch.Tensor) -> tuple[torch.Tensor, torch.cuda.Event | None]:
        """A non-blocking copy of `ids` to pinned host memory and the event that marks it done
        (None off CUDA, where the copy is synchronous)."""
        on_cuda = ids.device.type == "cuda"
        host = torch.empty(ids.shape, dtype=torch.int64, pin_memory=on_cuda)
        host.copy_(ids, non_blocking=on_cuda)
        ready = None
        if on_cuda:
            ready = torch.cuda.Event()
            ready.record()
        return host, ready

    def _consume(self, step: InflightStep, placed: list[tuple[Request, int, int]], job: FillJob | None
                 ) -> tuple[dict[str, str], set[str]]:
        """The grammars' side of resolving a step: (errors, ids of requests whose token is held).

        A structured token is reported only once its grammar has consumed it, as in the
        synchronous loop (a rejected token is reported with the error, which drops it). Tokens the
        mask thread consumes (`job`) are held until it has, unless they end the request (EOS, a
        stop token id, a length limit): for those this waits for the consume phase, so that the
        grammar's termination and a rejection are known now. The others are consumed here.
        """
        errors: dict[str, str] = {}
        held: set[str] = set()
        by_job = job.consumed_ids if job is not None else set()
        mine, waiting = [], []
        for req, index, token in placed:
            if req.sampling_params.structured_outputs is None:
                continue
            final = req.is_finished or token == req.eos_token_id or token in req.stop_token_ids
            if req.request_id not in by_job:
                mine.append((req, index + 1))
            elif final:
                waiting.append(req.request_id)
            else:
                held.add(req.request_id)
        if waiting:
            rejected = job.wait_consumed()
            errors = {rid: rejected.pop(rid) for rid in waiting if rid in rejected}
        if step.accept and mine:
            errors.update(self.structured.accept_through(mine))
        return errors, held

    def _resolve(self, step: InflightStep, outputs: dict[str, EngineCoreOutput], job: FillJob | None = None) -> None:
        """Reads a step's ids, fills the placeholders, consumes them in the grammars, applies stop
        tokens, records outputs (as the synchronous loop does, in that order). `job` is the mask
        thread's job that consumes some of these ids (see the module docstring)."""
        if step.ready is not None:
            step.ready.synchronize()
        placed = []
        # (lengths and `is_finished` read directly: once a request a step, each property a Python call)
        for req, index, token in zip(step.requests, step.out_index, step.host.tolist()):
            if ((req.is_finished and req.status in (RequestStatus.FINISHED_ABORTED, RequestStatus.FINISHED_ERROR))
                    or index >= len(req.output_token_ids) or req.output_token_ids[index] != PLACEHOLDER):
                self._pending_logprobs.pop(req.request_id, None)
                continue  # dropped: aborted, or stopped on an earlier token
            req.output_token_ids[index] = token
            req.all_token_ids[len(req.prompt_token_ids) + index] = token
            placed.append((req, index, token))
        errors, held = {}, set()
        if self.structured is not None:
            errors, held = self._consume(step, placed, job)
        for req, index, token in placed:
            if req.request_id in held:   # reported once the mask thread has consumed it
                self._held[req.request_id] = token
                continue
            if req.request_id in errors:   # rejected by its grammar: never reported
                self._pending_logprobs.pop(req.request_id, None)
                continue
            out = outputs.setdefault(req.request_id, EngineCoreOutput(req.request_id, []))
            out.new_token_ids.append(token)
            logprobs = self._pending_logprobs.pop(req.request_id, None)
            if logprobs is not None:
                out.new_logprobs = (out.new_logprobs or []) + [logprobs]
            stops, reason = stop_token_rule(req, token, index + 1)
            if stops:
                req.stop_reason = reason
                del req.output_token_ids[index + 1:]
                del req.all_token_ids[req.num_prompt_tokens + index + 1:]
                if not req.is_finished:
                    self.scheduler.finish(req.request_id, RequestStatus.FINISHED_STOPPED)
                else:  # already ended by a length limit on a later placeholder
                    req.status = RequestStatus.FINISHED_STOPPED
            if req.is_finished and index == len(req.output_token_ids) - 1:
                self._release(req.request_id)
                out.finish_reason, out.stop_reason = req.status.value, req.stop_reason
        by_id = {req.request_id: req for req, _, _ in placed}
        for request_id, error in errors.items():
            self._fail(by_id.get(request_id), outputs.setdefault(request_id, EngineCoreOutput(request_id, [])), error)
