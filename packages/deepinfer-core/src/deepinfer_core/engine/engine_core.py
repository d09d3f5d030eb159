# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""EngineCore: the schedule -> execute -> sample -> update loop over token ids (no text)."""

from __future__ import annotations

import dataclasses
import random
from typing import TYPE_CHECKING, Protocol

import torch

from deepinfer_core.engine.kv_cache import BlockPool, KVCacheManager
from deepinfer_core.engine.request import Request, RequestStatus
from deepinfer_core.engine.scheduler import Scheduler, SchedulerConfig, SchedulerOutput
from deepinfer_core.executor.batch import ModelOutput, ScheduledChunk
from deepinfer_core.executor.transfer import to_device
from deepinfer_core.sampling.logprobs import TokenLogprobs, token_logprobs
from deepinfer_core.sampling.sampler import Sampler
from deepinfer_core.sampling.seeds import to_int64

if TYPE_CHECKING:
    from deepinfer_core.config import EngineConfig
    from deepinfer_core.engine.speculative import SpeculativeDecoder
    from deepinfer_core.sampling_params import SamplingParams
    from deepinfer_core.structured.manager import StructuredOutputManager


class Runner(Protocol):
    """The part of `executor.model_runner.ModelRunner` the engine core uses. With a proposer that
    declines a step's target features (`Proposer.wants_features`), `execute_model` is called as
    `execute_model(chunks, features=False)` and returns `aux_hidden=None`."""

    def kv_bytes_per_block(self) -> int: ...

    def allocate_kv_cache(self, num_blocks: int | None = None) -> int: ...

    def execute_model(self, chunks: list[ScheduledChunk]) -> ModelOutput: ...


@dataclasses.dataclass
class EngineCoreOutput:
    """What one step produced for one request.

    Attributes:
        request_id: the request.
        new_token_ids: tokens emitted this step (0 or 1; up to k + 1 with speculative decoding;
            2 when the asynchronous loop reports a structured token it held back a step).
        new_logprobs: one TokenLogprobs per new token (None unless the request asked).
        prompt_logprobs: logprobs of prompt positions finished this step, in order (position 0
            has none); None unless asked.
        finish_reason: "stop" | "length" | "abort" | "error" once finished, else None.
        stop_reason: the stop token id that ended it (None for EOS and other reasons).
        error: why the request failed (finish_reason "error"), e.g. a grammar that does not
            compile or rejected a token; the message names the field. `new_token_ids` of such
            an output are valid tokens before the failure (a rejected token is never sent).
        spec_counts: (proposed, verified, accepted) draft tokens of this step's verification
            (speculative decoding), else None.
    """

    request_id: str
    new_token_ids: list[int]
    new_logprobs: list[TokenLogprobs] | None = None
    prompt_logprobs: list[TokenLogprobs] | None = None
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    error: str | None = None
    spec_counts: tuple[int, int, int] | None = None


class EngineCore:
    """Owns the scheduler, KV block pool, sampler and model runner of one engine.

    The KV pool gets `kv_cache_memory // runner.kv_bytes_per_block()` blocks, which must hold
    at least one `max_model_len` sequence (so a request alone can always run and preemption
    always makes progress).

    Args:
        runner: executes steps (see `Runner`).
        config: engine limits (block size, budgets, KV memory, seed).
        max_model_len: resolved longest sequence.
        vocab_size: V, rows of the logits.
        eos_token_id: the model's EOS id, or None.
        structured: compiles grammars and fills token masks for requests with
            `structured_outputs`; None rejects such requests.
        speculative: drafts and verifies tokens (speculative decoding); None decodes one token
            per request per step.

    Raises:
        ValueError: the KV budget holds fewer tokens than `max_model_len`, or the device cannot
            allocate it (names `kv_cache_memory`).
    """

    def __init__(self, runner: Runner, config: EngineConfig, max_model_len: int, vocab_size: int,
                 eos_token_id: int | None, structured: StructuredOutputManager | None = None,
                 speculative: SpeculativeDecoder | None = None) -> None:
        self.runner = runner
        self.structured = structured
        self.speculative = speculative
        self._dormant_step = False   # a dormant step is being updated (see `_settle_when_idle`)
        self.max_model_len = max_model_len
        self.vocab_size = vocab_size
        self.eos_token_id = eos_token_id
        num_blocks = config.kv_cache_memory // runner.kv_bytes_per_block()
        if num_blocks * config.block_size < max_model_len:
            raise ValueError(
                f"kv_cache_memory: {config.kv_cache_memory} bytes hold {num_blocks} blocks of {config.block_size} "
                f"tokens, fewer than max_model_len ({max_model_len}); raise kv_cache_memory or lower max_model_len")
        try:
            runner.allocate_kv_cache(num_blocks)
        except RuntimeError as exc:  # the allocator refused (torch.OutOfMemoryError is a RuntimeError)
            raise ValueError(f"kv_cache_memory: cannot allocate {num_blocks} KV blocks "
                             f"({config.kv_cache_memory} bytes) on {config.device}: {exc}") from exc
        sched_config = SchedulerConfig(config.max_num_seqs, config.max_num_batched_tokens, max_model_len,
                                       config.enable_chunked_prefill)
        self.scheduler = Scheduler(sched_config, KVCacheManager(BlockPool(num_blocks), config.block_size),
                                   is_ready=None if structured is None else structured.is_ready)
        if hasattr(runner, "init_block_tables"):
            runner.init_block_tables(config.max_num_seqs, max_model_len)
        self.sampler = Sampler()
        self._rng = random.Random(config.seed)
        self._arrivals = 0

    def draw_seed(self) -> int:
        """A seed for a request that gave none, from the engine's own seeded generator."""
        return to_int64(self._rng.getrandbits(64))

    def check_request(self, prompt_token_ids: list[int], params: SamplingParams) -> None:
        """Validates a request without adding it.

        Raises:
            ValueError: empty prompt or token id outside the vocabulary (names `prompt`), prompt
                longer than `max_model_len`, or a sampling field out of range (names the field).
        """
        if not prompt_token_ids:
            raise ValueError("prompt must not be empty")
        if len(prompt_token_ids) > self.max_model_len:
            raise ValueError(f"prompt is {len(prompt_token_ids)} tokens, longer than max_model_len "
                             f"({self.max_model_len})")
        if min(prompt_token_ids) < 0 or max(prompt_token_ids) >= self.vocab_size:
            raise ValueError(f"prompt token ids must be in [0, {self.vocab_size})")
        params.validate(self.vocab_size)
        if params.structured_outputs is not None and self.structured is None:
            raise ValueError("structured_outputs: this engine has no structured-output backend (no tokenizer)")

    def compile_structured(self, params: SamplingParams) -> None:
        """Compiles the request's grammar now (cached for `add_request`), waiting up to the timeout.

        Raises:
            ValueError: the grammar cannot be compiled in time; the message names the field
                (`json_schema`, `regex`, ...) and any unsupported schema keyword.
        """
        if params.structured_outputs is not None:
            if self.structured is None:
                raise ValueError("structured_outputs: this engine has no structured-output backend (no tokenizer)")
            self.structured.compile_now(params.structured_outputs)

    def add_request(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams,
                    seed: int | None = None) -> None:
        """Validates and queues a request (FCFS by the order of calls).

        Args:
            seed: overrides `params.seed`; with neither, one is drawn with `draw_seed`.

        Raises:
            ValueError: see `check_request`; also a duplicate `request_id`.
        """
        self.check_request(prompt_token_ids, params)
        if seed is None:
            seed = params.seed if params.seed is not None else self.draw_seed()
        request = Request(request_id, prompt_token_ids, params, arrival=self._arrivals,
                          eos_token_id=self.eos_token_id, seed=to_int64(seed))
        self.scheduler.add_request(request)
        if self.speculative is not None:
            self.speculative.track(request)
        if self.structured is not None:
            self.structured.add_request(request)  # compiles in the background; admitted once ready
        self._arrivals += 1

    def abort(self, request_id: str) -> bool:
        """Aborts a queued or running request; returns False if it is unknown or finished."""
        self._release(request_id)
        known = self.scheduler.abort(request_id) is not None
        self._settle_when_idle()
        return known

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished()

    def draining(self, flag: bool) -> None:
        """Says whether the engine now only drains the requests it holds: none will be added
        until it says False (`LLM.generate` around its steps). A proposer with the optional
        `draining` hears it (`Proposer`): once no request waits, it is in a batch's tail."""
        if self.speculative is not None:
            self.speculative.draining(flag)

    @property
    def num_preemptions(self) -> int:
        return self.scheduler.num_preemptions

    @torch.inference_mode()
    def step(self) -> list[EngineCoreOutput]:
        """Runs one step: schedule, execute, sample, update.

        Returns:
            One output per request that sampled a token, finished, or got prompt logprobs.
        """
        outputs = self._fail_grammars()
        sched = self._schedule()
        if not sched.scheduled:
            if self.structured is not None and self.structured.has_pending():
                self.structured.wait()  # only requests whose grammar is still compiling are left
            elif self.scheduler.has_unfinished():  # the KV/budget checks above rule this out
                raise RuntimeError("scheduler made no progress with unfinished requests")
            return list(outputs.values())
        self._run(sched, outputs)
        return list(outputs.values())

    def _schedule(self) -> SchedulerOutput:
        sched = self.scheduler.schedule()
        for req in sched.preempted:  # its blocks are gone: so is its block-table row
            self._release_row(req.request_id)
        return sched

    def _release_row(self, request_id: str) -> None:
        if hasattr(self.runner, "release"):
            self.runner.release(request_id)

    def _run(self, sched: SchedulerOutput, outputs: dict[str, EngineCoreOutput]) -> None:
        """Executes a scheduled step synchronously and records its results into `outputs`."""
        drafts = sched.spec_token_ids
        chunks = [self._chunk(req, n, drafts.get(req.request_id, [])) for req, n in sched.scheduled]
        sampling = [req for (req, _), c in zip(sched.scheduled, chunks) if c.sample]
        plain = [req for req in sampling if req.request_id not in drafts]
        # Grammar masks depend only on the tokens accepted so far: fill them while the model runs.
        filling = self.structured.start_fill(plain) if self.structured is not None and plain else None
        dormant = self._dormant(drafts)
        quiet = dormant and self.speculative.dormant.features   # a quiet stretch keeps the features
        if (self.speculative is not None and not drafts and not quiet
                and (dormant or not self.speculative.wants_features())):
            model_out = self.runner.execute_model(chunks, features=False)
        else:
            model_out = self.runner.execute_model(chunks)
        plain_rows, spec_rows = self._split_rows(sampling, drafts, model_out.logits.device)
        masks = filling.result() if filling is not None else None
        sampled = self.sampler(model_out.logits[plain_rows], plain, masks) if plain else None
        for i, logits in model_out.prompt_logits.items():
            req = sched.scheduled[i][0]
            out = outputs.setdefault(req.request_id, EngineCoreOutput(req.request_id, []))
            out.prompt_logprobs = self._prompt_logprobs(req, chunks[i].start_pos, len(chunks[i].token_ids), logits)
        tokens: dict[str, list[int]] = {}
        for b, req in enumerate(plain):
            out = outputs.setdefault(req.request_id, EngineCoreOutput(req.request_id, []))
            tokens[req.request_id] = [sampled.token_ids[b]]
            out.new_token_ids = out.new_token_ids + tokens[req.request_id]  # after any resolved earlier
            if sampled.logprobs[b] is not None:  # after any resolved earlier in this call
                out.new_logprobs = (out.new_logprobs or []) + [sampled.logprobs[b]]
        if self.structured is not None and masks is not None:
            errors = dict(masks.errors)   # rejected a token consumed before the fill
            errors.update(self.structured.accept_step([(r, tokens[r.request_id]) for r in plain
                                                       if r.request_id not in masks.errors]))
            for request_id, error in errors.items():   # the rejected (or unmasked) token is not reported
                out = outputs[request_id]
                out.error = error
                out.new_token_ids = out.new_token_ids[:-1]
                if out.new_logprobs is not None:
                    out.new_logprobs = out.new_logprobs[:-1]
                tokens[request_id] = []
        spec_reqs = [req for req in sampling if req.request_id in drafts]
        earlier: dict[str, int] = {}
        if spec_reqs:
            emitted, logprobs = self.speculative.verify(model_out.logits[spec_rows], spec_reqs,
                                                        [drafts[r.request_id] for r in spec_reqs])
            for req, ids, lps in zip(spec_reqs, emitted, logprobs):
                out = outputs.setdefault(req.request_id, EngineCoreOutput(req.request_id, []))
                earlier[req.request_id] = len(out.new_token_ids)  # resolved from an overlapped step
                out.new_token_ids = out.new_token_ids + ids
                if lps is not None:
                    out.new_logprobs = (out.new_logprobs or []) + lps
                out.spec_counts = self.speculative.take_counts(req.request_id)
                tokens[req.request_id] = ids
        before = {r.request_id: r.num_output_tokens for r in spec_reqs}

        self._dormant_step = dormant   # its stretch is reported by `ran` below, also when the batch ends here
        try:
            for req in self.scheduler.update_from_output(sched, tokens):
                self._release(req.request_id)
                out = outputs[req.request_id]
                out.finish_reason, out.stop_reason = req.status.value, req.stop_reason
                if req.request_id in before:  # a stop inside the accepted drafts: drop what follows it
                    kept = earlier[req.request_id] + req.num_output_tokens - before[req.request_id]
                    out.new_token_ids = out.new_token_ids[:kept]
                    if out.new_logprobs is not None:
                        out.new_logprobs = out.new_logprobs[:kept]
        finally:
            self._dormant_step = False
        if dormant:
            if quiet and model_out.aux_hidden is not None:   # only the features are handed over
                failed = self.speculative.observe(sched.scheduled, drafts, tokens, model_out.aux_hidden,
                                                  model_out.cu_seqlens)
                for request_id, error in failed.items():  # ended below, alone
                    outputs.setdefault(request_id, EngineCoreOutput(request_id, [])).error = error
            self.speculative.dormant.ran(len(self.scheduler.running))
        elif self.speculative is not None:
            failed = {}
            if model_out.aux_hidden is not None:
                failed = self.speculative.observe(sched.scheduled, drafts, tokens, model_out.aux_hidden,
                                                  model_out.cu_seqlens)
            for req in spec_reqs:
                if not req.is_finished:
                    error = self.speculative.commit(req)
                    if error is not None:
                        failed[req.request_id] = error
            for request_id, error in failed.items():  # ended below, alone
                outputs.setdefault(request_id, EngineCoreOutput(request_id, [])).error = error
            for request_id, error in self.speculative.propose(self.scheduler.running).items():
                outputs.setdefault(request_id, EngineCoreOutput(request_id, [])).error = error
        for out in outputs.values():
            if out.error is not None and out.finish_reason is None:  # a grammar or the proposer failed it
                self._finish_with_error(out)

    def _dormant(self, drafts: dict[str, list[int]]) -> bool:
        """Whether this step, without drafts, is one the proposer declared dormant: it is asked
        nothing for it (`DormantSteps`, `Proposer.dormant_rounds`)."""
        if self.speculative is None:
            return False
        if drafts:   # (drafts from before a stretch: the proposer hears of its steps first)
            self.speculative.dormant.settle()
            return False
        return self.speculative.dormant.step(len(self.scheduler.running))

    def _settle_when_idle(self) -> None:
        """With no request left, the last dormant stretch is reported now, not by the next batch
        (a dormant step that finishes the batch reports it itself: `DormantSteps.ran`, its last
        step at the new count, as a proposer asked step by step hears it)."""
        if self.speculative is not None and not self._dormant_step and not self.scheduler.has_unfinished():
            self.speculative.dormant.settle()

    def _fail_grammars(self) -> dict[str, EngineCoreOutput]:
        """Ends the requests whose grammar failed to compile (or timed out): they fail alone."""
        outputs: dict[str, EngineCoreOutput] = {}
        if self.structured is not None:
            for request_id, message in self.structured.poll():
                out = outputs[request_id] = EngineCoreOutput(request_id, [], error=message)
                self._finish_with_error(out)
        return outputs

    def _finish_with_error(self, out: EngineCoreOutput) -> None:
        self._release(out.request_id)
        self.scheduler.finish(out.request_id, RequestStatus.FINISHED_ERROR)
        out.finish_reason = RequestStatus.FINISHED_ERROR.value
        self._settle_when_idle()

    def _release(self, request_id: str) -> None:
        self.sampler.release(request_id)
        self._release_row(request_id)
        if self.speculative is not None:
            self.speculative.remove(request_id)
            self._settle_when_idle()
        if self.structured is not None:
            self.structured.release(request_id)

    @staticmethod
    def _split_rows(sampling: list[Request], drafts: dict[str, list[int]], device: torch.device
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits rows of plain requests (one each) and of drafted ones (1 + drafts each), in order."""
        plain: list[int] = []
        spec: list[int] = []
        row = 0
        for req in sampling:
            n = 1 + len(drafts.get(req.request_id, ()))
            (spec if n > 1 or req.request_id in drafts else plain).extend(range(row, row + n))
            row += n
        both = to_device(plain + spec, torch.int64, device)   # one pinned copy: no device sync
        return both[:len(plain)], both[len(plain):]

    def _chunk(self, req: Request, num_new: int, drafts: list[int]) -> ScheduledChunk:
        start = req.num_computed_tokens
        end = start + num_new - len(drafts)
        # Rows of this chunk predict positions start+1 .. end; ask only if one of them is owed.
        wants_prompt_logprobs = (req.sampling_params.prompt_logprobs is not None
                                 and req.next_prompt_logprob_pos <= min(end, req.num_prompt_tokens - 1))
        return ScheduledChunk(token_ids=req.all_token_ids[start:end] + drafts, start_pos=start,
                              block_ids=req.block_ids, sample=end == req.num_tokens,
                              prompt_logprobs=wants_prompt_logprobs, num_logits=1 + len(drafts),
                              request_id=req.request_id)

    @staticmethod
    def _prompt_logprobs(req: Request, start: int, length: int, logits: torch.Tensor) -> list[TokenLogprobs]:
        # Row j holds the distribution of position start + j + 1; keep prompt positions still owed.
        first = max(req.next_prompt_logprob_pos, start + 1)
        last = min(start + length, req.num_prompt_tokens - 1)
        if last < first:
            return []
        targets = torch.tensor(req.prompt_token_ids[first:last + 1], dtype=torch.int64, device=logits.device)
        rows = logits[first - start - 1:last - start]
        req.next_prompt_logprob_pos = last + 1
        return token_logprobs(rows, targets, [req.sampling_params.prompt_logprobs] * len(targets))
