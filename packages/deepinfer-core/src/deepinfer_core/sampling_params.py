# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""SamplingParams: how one request turns logits into tokens and when it stops."""

from __future__ import annotations

import dataclasses
from typing import Any

from deepinfer_core.structured.params import StructuredOutputs

# Temperatures below this are treated as greedy: logits / T would overflow float32.
GREEDY_EPS = 1e-5
# Most top-N logprobs a request may ask for (vLLM's default `max_logprobs`).
MAX_LOGPROBS = 20
# The sampler runs in float32: larger values become inf (NaN logits), smaller positive ones 0.
FLOAT32_MAX = 3.4028234663852886e38
FLOAT32_MIN_NORMAL = 1.1754943508222875e-38


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclasses.dataclass
class SamplingParams:
    """Sampling and stopping settings of one request (the field meanings follow vLLM/OpenAI).

    Penalties: `repetition_penalty` follows the CTRL paper (Keskar et al. 2019) as implemented by
    HF transformers and vLLM: for every token seen in the prompt or the output so far, a
    positive logit is divided by it and a negative one multiplied. `presence_penalty` and
    `frequency_penalty` follow the OpenAI API definition over the output tokens only:
    `logit -= frequency_penalty * count + presence_penalty * (count > 0)`.

    Attributes:
        n: completions per prompt; child i > 0 draws with a seed derived from (seed, i).
        temperature: softmax temperature; 0 (or below 1e-5) means greedy; at most 3.4e38 (the
            sampler runs in float32, where larger values become inf).
        top_p: nucleus mass in (0, 1]; 1 disables; at least 1.2e-38 (smaller rounds to 0 in float32).
        top_k: keep the k most likely tokens; 0 (or -1) disables.
        min_p: drop tokens with probability < min_p * max probability; 0 disables.
        presence_penalty: in [-2, 2], OpenAI definition over output tokens.
        frequency_penalty: in [-2, 2], OpenAI definition over output tokens.
        repetition_penalty: > 0 and finite in float32 ([1.2e-38, 3.4e38]); 1 disables (CTRL
            definition over prompt + output tokens).
        seed: per-request seed; None draws one from the engine's seeded generator at admission.
        max_tokens: most generated tokens; None means up to `max_model_len`.
        min_tokens: EOS and `stop_token_ids` are banned until this many tokens exist.
        stop: a stop string or a list of them; the output text ends before the first match.
        stop_token_ids: token ids that finish the request (the token stays in `token_ids`).
        include_stop_str_in_output: keep the matched stop string in the text.
        ignore_eos: do not stop at the EOS token.
        logprobs: top-N logprobs per generated token (plus the sampled token), from the raw model
            distribution; None returns none.
        prompt_logprobs: top-N logprobs per prompt token (plus the prompt token itself).
        skip_special_tokens: drop special tokens from the detokenized text.
        structured_outputs: constrain the output to a JSON schema, JSON object, regex, grammar
            or choice (a StructuredOutputs, or a dict of its fields such as
            `{"json_schema": {...}}`). EOS is allowed only once the output is a complete match;
            the grammar, not `min_tokens`, decides when EOS is the only legal token.

    Raises:
        ValueError: on construction (or `validate`) when a field is out of range; the message
            names the field, e.g. "temperature must be >= 0, got -1".
    """

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    seed: int | None = None
    max_tokens: int | None = 16
    min_tokens: int = 0
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    include_stop_str_in_output: bool = False
    ignore_eos: bool = False
    logprobs: int | None = None
    prompt_logprobs: int | None = None
    skip_special_tokens: bool = True
    structured_outputs: StructuredOutputs | dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self._check()

    def _normalize(self) -> None:
        """Canonical forms (also after a field was reassigned): `stop` and `stop_token_ids` lists, top_k -1 -> 0."""
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        elif self.stop is None:
            self.stop = []
        elif isinstance(self.stop, (list, tuple)):
            self.stop = list(self.stop)
        else:
            raise ValueError(f"stop must be a str, a list of str or None, got {type(self.stop).__name__}")
        if self.stop_token_ids is None:
            self.stop_token_ids = []
        elif isinstance(self.stop_token_ids, (list, tuple, set, frozenset)):
            self.stop_token_ids = list(self.stop_token_ids)
        else:
            raise ValueError(f"stop_token_ids must be a list of ints or None, got {type(self.stop_token_ids).__name__}")
        if _is_int(self.top_k) and self.top_k == -1:
            self.top_k = 0
        if self.structured_outputs is not None:
            self.structured_outputs = StructuredOutputs.from_value(self.structured_outputs)

    @property
    def greedy(self) -> bool:
        """True when the request takes the argmax token (temperature below 1e-5)."""
        return self.temperature < GREEDY_EPS

    @property
    def has_penalties(self) -> bool:
        """True when any of the three penalties changes the logits."""
        return (self.repetition_penalty != 1.0 or self.presence_penalty != 0.0
                or self.frequency_penalty != 0.0)

    def validate(self, vocab_size: int) -> None:
        """Re-checks every field and the vocabulary-dependent limits (called when a request is added).

        Fields reassigned after construction are normalized again (e.g. a plain-string `stop`).

        Args:
            vocab_size: V, the model's vocabulary size.

        Raises:
            ValueError: a field is out of range; the message names the field.
        """
        self._check()
        if self.top_k > vocab_size:
            raise ValueError(f"top_k must be <= the vocabulary size ({vocab_size}), got {self.top_k}")
        limit = min(MAX_LOGPROBS, vocab_size)  # top-N cannot exceed the vocabulary
        for name in ("logprobs", "prompt_logprobs"):
            value = getattr(self, name)
            if value is not None and value > limit:
                raise ValueError(f"{name} must be <= {limit}, got {value}")
        for token_id in self.stop_token_ids:
            if token_id >= vocab_size:
                raise ValueError(f"stop_token_ids must be < the vocabulary size ({vocab_size}), got {token_id}")

    def _check(self) -> None:
        self._normalize()
        _require(_is_int(self.n) and self.n >= 1, "n must be an int >= 1", self.n)
        _require(_is_number(self.temperature) and self.temperature >= 0,
                 "temperature must be >= 0", self.temperature)
        _require(self.temperature <= FLOAT32_MAX, "temperature must be finite in float32 (<= 3.4e38)",
                 self.temperature)
        _require(_is_number(self.top_p) and 0 < self.top_p <= 1, "top_p must be in (0, 1]", self.top_p)
        _require(self.top_p >= FLOAT32_MIN_NORMAL, "top_p must be >= 1.2e-38 (it would round to 0 in float32)",
                 self.top_p)
        _require(_is_int(self.top_k) and self.top_k >= 0,
                 "top_k must be an int >= 0 (0 or -1 disables)", self.top_k)
        _require(_is_number(self.min_p) and 0 <= self.min_p <= 1, "min_p must be in [0, 1]", self.min_p)
        for name in ("presence_penalty", "frequency_penalty"):
            value = getattr(self, name)
            _require(_is_number(value) and -2 <= value <= 2, f"{name} must be in [-2, 2]", value)
        _require(_is_number(self.repetition_penalty) and self.repetition_penalty > 0,
                 "repetition_penalty must be > 0", self.repetition_penalty)
        _require(FLOAT32_MIN_NORMAL <= self.repetition_penalty <= FLOAT32_MAX,
                 "repetition_penalty must be in [1.2e-38, 3.4e38] (finite and nonzero in float32)",
                 self.repetition_penalty)
        _require(self.seed is None or _is_int(self.seed), "seed must be an int or None", self.seed)
        _require(self.max_tokens is None or (_is_int(self.max_tokens) and self.max_tokens >= 1),
                 "max_tokens must be an int >= 1 or None", self.max_tokens)
        _require(_is_int(self.min_tokens) and self.min_tokens >= 0,
                 "min_tokens must be an int >= 0", self.min_tokens)
        if self.max_tokens is not None and self.min_tokens > self.max_tokens:
            raise ValueError(f"min_tokens must be <= max_tokens ({self.max_tokens}), got {self.min_tokens}")
        for s in self.stop:
            _require(isinstance(s, str) and s != "", "stop must contain non-empty strings", s)
        for t in self.stop_token_ids:
            _require(_is_int(t) and t >= 0, "stop_token_ids must contain ints >= 0", t)
        for name in ("logprobs", "prompt_logprobs"):
            value = getattr(self, name)
            _require(value is None or (_is_int(value) and value >= 0), f"{name} must be an int >= 0 or None",
                     value)
        for name in ("include_stop_str_in_output", "ignore_eos", "skip_special_tokens"):
            _require(isinstance(getattr(self, name), bool), f"{name} must be a bool", getattr(self, name))


def _require(ok: bool, message: str, value: object) -> None:
    if not ok:
        raise ValueError(f"{message}, got {value!r}")
