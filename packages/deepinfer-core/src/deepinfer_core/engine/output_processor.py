# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""OutputProcessor: engine-core token outputs -> text, stop strings, logprobs, RequestOutputs.

The frontend half of the engine: it detokenizes, applies stop strings (asking the caller to
abort requests that hit one), converts logprobs and keeps timings. A request with `n > 1` runs
as n engine requests ("children") gathered into one RequestOutput.

Text is needed while a request runs only to find its stop strings: a completion with stop
strings is detokenized token by token (`IncrementalDetokenizer`), one without them once, when
it ends (`FinalDetokenizer`: two tokenizer calls a request instead of two a token; the same text
wherever decoding is prefix-stable, as byte-level BPE always is) or, failed or aborted, when its
output is read. Its `push` never decodes, so a tokenizer that raises fails such a request at its
end, not at the token.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import TYPE_CHECKING

from deepinfer_recipe import FinalDetokenizer, IncrementalDetokenizer, StopStringMatcher

from deepinfer_core.outputs import CompletionOutput, Logprob, RequestMetrics, RequestOutput

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from deepinfer_core.engine.engine_core import EngineCoreOutput
    from deepinfer_core.sampling.logprobs import TokenLogprobs
    from deepinfer_core.sampling_params import SamplingParams


class _Completion:
    """Text and logprob state of one child."""

    def __init__(self, index: int, tokenizer: Tokenizer | None, prompt_token_ids: list[int] | None,
                 params: SamplingParams | None) -> None:
        self.output = CompletionOutput(index=index)
        self.pieces: list[str] = []
        self.streaming, self.detokenizer = True, None
        if params is None:  # a request that failed before reaching the engine
            return
        if params.logprobs is not None:
            self.output.logprobs, self.output.cumulative_logprob = [], 0.0
        self.stops = StopStringMatcher(params.stop, params.include_stop_str_in_output)
        self.streaming = bool(self.stops.stops)   # text token by token: only stop strings read it
        self.detokenizer = make_detokenizer(tokenizer, prompt_token_ids, params.skip_special_tokens,
                                            streaming=self.streaming)

    def settle(self) -> None:
        """The text held for the end of a completion that ended without its final output from the
        engine (failed, aborted): what the token-by-token stream would have released by then
        (`FinalDetokenizer.cut`: no incomplete trailing character). A decode that raises here adds
        nothing (the request has failed already). Once a completion has a finish reason; a no-op
        after its final flush."""
        if self.streaming or self.detokenizer is None or self.output.finish_reason is None:
            return
        try:
            self.pieces.append(self.detokenizer.cut())
        except Exception:  # noqa: BLE001, S110 - the request's error is already set
            pass


def make_detokenizer(tokenizer: Tokenizer, prompt_token_ids: list[int], skip_special_tokens: bool = True,
                     streaming: bool = True) -> IncrementalDetokenizer | FinalDetokenizer:
    """The detokenizer of one completion (recipe's, over `tokenizer.decode`).

    Args:
        tokenizer: a `tokenizers.Tokenizer`.
        prompt_token_ids: the prompt; its last few ids are decoding context.
        skip_special_tokens: leave special tokens out of the text.
        streaming: text token by token (`IncrementalDetokenizer`); else all of it at `flush`
            (`FinalDetokenizer`).
    """
    decode = functools.partial(tokenizer.decode, skip_special_tokens=skip_special_tokens)
    if streaming:
        return IncrementalDetokenizer(decode, prompt_token_ids)
    return FinalDetokenizer(decode, prompt_token_ids)


class RequestState:
    """Frontend state of one prompt (all of its completions).

    Attributes:
        request_id: the user-visible id.
        child_ids: engine request ids, one per completion.
        finished: every completion has a finish reason.
    """

    def __init__(self, request_id: str, prompt: str | None, prompt_token_ids: list[int] | None,
                 params: SamplingParams | None, child_ids: list[str], tokenizer: Tokenizer | None) -> None:
        self.request_id = request_id
        self.prompt = prompt
        self.prompt_token_ids = prompt_token_ids
        self.params = params
        self.child_ids = child_ids
        self.completions = [_Completion(i, tokenizer, prompt_token_ids, params) for i in range(len(child_ids))]
        self.prompt_logprobs: list[dict[int, Logprob] | None] | None = (
            [None] if params is not None and params.prompt_logprobs is not None else None)
        self.metrics = RequestMetrics(arrival_time=time.monotonic())
        self.error: str | None = None
        self.finished = False

    def fail(self, message: str, finish_reason: str = "error") -> None:
        """Marks the request failed: every unfinished completion ends with `finish_reason`."""
        self.error = message
        for c in self.completions:
            if c.output.finish_reason is None:
                c.output.finish_reason = finish_reason
        self.update_finished()

    def to_output(self) -> RequestOutput:
        """A snapshot RequestOutput (final once `finished`). Texts so far: a completion without stop
        strings has its text only once it has a finish reason (its ids are decoded at the end: the
        first snapshot after a failure or abort decodes them, `_Completion.settle`)."""
        for c in self.completions:
            c.settle()
            c.output.text = "".join(c.pieces)
        return RequestOutput(
            request_id=self.request_id, prompt=self.prompt, prompt_token_ids=self.prompt_token_ids,
            prompt_logprobs=self.prompt_logprobs, outputs=[dataclasses.replace(c.output) for c in self.completions],
            finished=self.finished, metrics=dataclasses.replace(self.metrics), error=self.error)

    def update_finished(self) -> None:
        """Sets `finished` (and the finish time) once every completion has a finish reason."""
        if not self.finished and all(c.output.finish_reason is not None for c in self.completions):
            self.finished = True
            self.metrics.finished_time = time.monotonic()


@dataclasses.dataclass
class ProcessedOutputs:
    """What one step changed.

    Attributes:
        finished: requests that finished this step.
        num_new_tokens: tokens generated this step (all requests).
        to_abort: engine request ids the caller must abort (stop string hit, or failure).
    """

    finished: list[RequestState]
    num_new_tokens: int
    to_abort: list[str]


class OutputProcessor:
    """Tracks RequestStates and applies EngineCoreOutputs to them.

    Args:
        tokenizer: a `tokenizers.Tokenizer` (a transformers tokenizer's `.backend_tokenizer`).
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._by_child: dict[str, tuple[RequestState, int]] = {}

    def add(self, request_id: str, prompt: str | None, prompt_token_ids: list[int], params: SamplingParams,
            child_ids: list[str]) -> RequestState:
        """Registers a request whose children the caller adds to the engine."""
        state = RequestState(request_id, prompt, prompt_token_ids, params, child_ids, self.tokenizer)
        for i, child in enumerate(child_ids):
            self._by_child[child] = (state, i)
        return state

    def add_failed(self, request_id: str, prompt: str | None, prompt_token_ids: list[int] | None,
                   message: str, n: int = 1) -> RequestState:
        """A request that failed before reaching the engine (finish reason "error")."""
        state = RequestState(request_id, prompt, prompt_token_ids, None, [f"{request_id}-{i}" for i in range(n)], None)
        state.fail(message)
        return state

    def has_unfinished(self) -> bool:
        return bool(self._by_child)

    def drop(self, child_ids: list[str]) -> None:
        """Forgets children (after the caller aborted them in the engine)."""
        for child in child_ids:
            self._by_child.pop(child, None)

    def process(self, outputs: list[EngineCoreOutput]) -> ProcessedOutputs:
        """Applies one step's outputs; returns finished requests and ids to abort in the engine."""
        finished: list[RequestState] = []
        to_abort: dict[str, None] = {}  # ordered set
        num_new = 0
        now = time.monotonic()
        for out in outputs:
            entry = self._by_child.get(out.request_id)
            if entry is None:
                continue
            state, index = entry
            completion = state.completions[index].output
            if completion.finish_reason is not None:  # finished here already (stop string); late output
                continue
            num_new += len(out.new_token_ids)
            try:
                if out.error is not None:  # failed in the engine (e.g. its grammar did not compile)
                    if out.new_token_ids:  # valid tokens before the failure (a rejected one is never sent)
                        self._apply(state, index, dataclasses.replace(out, finish_reason=None, stop_reason=None,
                                                                      error=None), now)
                    if completion.finish_reason is None:  # else a stop string ended it first, cleanly
                        state.fail(out.error)
                else:
                    self._apply(state, index, out, now)
            except Exception as exc:  # noqa: BLE001 - one request fails alone
                state.fail(f"{type(exc).__name__}: {exc}")
            if completion.finish_reason is not None and out.finish_reason is None:
                to_abort[out.request_id] = None  # finished here but still alive in the engine
            if state.finished:
                finished.append(state)
                for child in state.child_ids:
                    self._by_child.pop(child, None)
                    if state.error is not None and child != out.request_id:
                        to_abort[child] = None  # aborting an engine-finished child is a no-op
        return ProcessedOutputs(finished, num_new, list(to_abort))

    def _apply(self, state: RequestState, index: int, out: EngineCoreOutput, now: float) -> None:
        c = state.completions[index]
        if out.prompt_logprobs:
            state.prompt_logprobs.extend(self._logprob_dicts(out.prompt_logprobs))
        if out.spec_counts is not None:
            proposed, verified, accepted = out.spec_counts
            state.metrics.spec_proposed += proposed
            state.metrics.spec_verified += verified
            state.metrics.spec_accepted += accepted
            state.metrics.spec_rounds += 1
        if out.new_token_ids and state.metrics.first_token_time is None:
            state.metrics.first_token_time = now
        if not c.streaming:
            self._apply_held(state, c, out)
            return
        # Token by token, so a stop string completed inside a multi-token step (speculative
        # decoding) ends the completion at that token: later tokens are not reported.
        released = ""
        tokens = out.new_token_ids
        for k, token in enumerate(tokens):
            state.metrics.num_generated_tokens += 1
            c.output.token_ids.append(token)
            if out.new_logprobs is not None:
                lp = out.new_logprobs[k]
                c.output.logprobs.extend(self._logprob_dicts([lp]))
                c.output.cumulative_logprob += lp.logprobs[0]
            text = c.detokenizer.push([token])
            if k == len(tokens) - 1 and out.finish_reason is not None:
                text += c.detokenizer.flush()
            released += c.stops.push(text)
            if c.stops.matched is not None:
                break
        if not tokens:
            released = c.stops.push(c.detokenizer.flush() if out.finish_reason is not None else "")
        if c.stops.matched is not None:
            c.output.finish_reason, c.output.stop_reason = "stop", c.stops.matched
        elif out.finish_reason is not None:
            released += c.stops.flush()
            c.output.finish_reason, c.output.stop_reason = out.finish_reason, out.stop_reason
        c.pieces.append(released)
        state.update_finished()

    def _apply_held(self, state: RequestState, c: _Completion, out: EngineCoreOutput) -> None:
        """`_apply` for a completion without stop strings: its tokens in one go, its text at the end."""
        tokens = out.new_token_ids
        state.metrics.num_generated_tokens += len(tokens)
        c.output.token_ids.extend(tokens)
        if out.new_logprobs is not None:
            c.output.logprobs.extend(self._logprob_dicts(out.new_logprobs))
            for lp in out.new_logprobs:   # one by one: the same float sum as `_apply`'s
                c.output.cumulative_logprob += lp.logprobs[0]
        c.detokenizer.push(tokens)
        if out.finish_reason is not None:
            c.pieces.append(c.detokenizer.flush())
            c.output.finish_reason, c.output.stop_reason = out.finish_reason, out.stop_reason
            state.update_finished()

    def _logprob_dicts(self, items: list[TokenLogprobs]) -> list[dict[int, Logprob]]:
        result = []
        for lp in items:
            texts = self.tokenizer.decode_batch([[t] for t in lp.token_ids], skip_special_tokens=False)
            entry: dict[int, Logprob] = {}
            for token_id, value, rank, text in zip(lp.token_ids, lp.logprobs, lp.ranks, texts):
                entry.setdefault(token_id, Logprob(value, rank, text))
            result.append(entry)
        return result
