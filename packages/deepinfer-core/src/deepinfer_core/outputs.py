# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What the engine hands back to users: RequestOutput, CompletionOutput, Logprob, RequestMetrics.

The fields mirror vLLM's offline API so code written for it reads the same.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Logprob:
    """One token's log-probability under the raw model distribution (before penalties/temperature).

    Attributes:
        logprob: natural log of the softmax probability.
        rank: 1 + the number of tokens with a strictly higher logprob (1 = the argmax).
        decoded_token: the token decoded on its own (may be "\ufffd" for a partial UTF-8 byte).
    """

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


# One dict per position: token id -> Logprob (the sampled/prompt token plus the top-N).
LogprobsList = list[dict[int, Logprob]]


@dataclasses.dataclass
class RequestMetrics:
    """Timings of one request, in seconds of `time.monotonic()`.

    Attributes:
        arrival_time: when the request was added.
        first_token_time: when its first output token was sampled (TTFT = this - arrival_time).
        finished_time: when it finished.
        num_generated_tokens: output tokens over all completions.
        spec_proposed: draft tokens the proposer returned for it (speculative decoding; 0 without;
            a proposer that schedules, like DSpark's confidence scheduling, returns only the
            drafts it chose to have verified, not all it drafted).
        spec_verified: draft tokens the target scored (proposed minus those the budget dropped).
        spec_accepted: draft tokens accepted.
        spec_rounds: verification steps (each emits accepted + 1 tokens unless a stop cuts it).
    """

    arrival_time: float
    first_token_time: float | None = None
    finished_time: float | None = None
    num_generated_tokens: int = 0
    spec_proposed: int = 0
    spec_verified: int = 0
    spec_accepted: int = 0
    spec_rounds: int = 0

    @property
    def mean_accepted_length(self) -> float | None:
        """Tokens emitted per verification round, bonus included (DSpark / DeepSpec convention)."""
        return None if not self.spec_rounds else (self.spec_accepted + self.spec_rounds) / self.spec_rounds

    @property
    def ttft(self) -> float | None:
        """Time to first token, seconds."""
        return None if self.first_token_time is None else self.first_token_time - self.arrival_time

    @property
    def tpot(self) -> float | None:
        """Mean time per output token after the first, seconds (None with fewer than 2 tokens)."""
        if self.first_token_time is None or self.finished_time is None or self.num_generated_tokens < 2:
            return None
        return (self.finished_time - self.first_token_time) / (self.num_generated_tokens - 1)


@dataclasses.dataclass
class CompletionOutput:
    """One completion of a request.

    Attributes:
        index: completion index in [0, n).
        text: detokenized output (stop string removed unless `include_stop_str_in_output`).
        token_ids: every generated token id, including a stop token or the token that completed
            a stop string.
        cumulative_logprob: sum of the sampled tokens' logprobs (None unless logprobs were asked).
        logprobs: per generated token, a dict whose first key is the sampled token, then the
            top-N in rank order (ties: lower token id first); None unless asked.
        finish_reason: "stop" (EOS, stop token or stop string), "length" (max_tokens or
            max_model_len), "abort", "error", or None while running.
        stop_reason: the stop string or stop token id that ended it; None for EOS or other reasons.
    """

    index: int
    text: str = ""
    token_ids: list[int] = dataclasses.field(default_factory=list)
    cumulative_logprob: float | None = None
    logprobs: LogprobsList | None = None
    finish_reason: str | None = None
    stop_reason: int | str | None = None

    def finished(self) -> bool:
        """True once a finish reason is set."""
        return self.finish_reason is not None


@dataclasses.dataclass
class RequestOutput:
    """The result of one prompt.

    Attributes:
        request_id: engine-assigned id.
        prompt: the prompt text (None when the prompt was given as token ids).
        prompt_token_ids: the tokenized prompt (None if tokenization failed).
        prompt_logprobs: per prompt position, the prompt token plus the top-N (the first position
            is None: nothing predicts it); None unless asked.
        outputs: the `n` completions, ordered by index.
        finished: every completion has finished.
        metrics: timings.
        error: why the request failed (its completions then carry finish_reason "error"),
            None on success.
    """

    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    prompt_logprobs: list[dict[int, Logprob] | None] | None
    outputs: list[CompletionOutput]
    finished: bool
    metrics: RequestMetrics | None = None
    error: str | None = None
