# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Request: the device-free state of one sequence inside the engine."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepinfer_core.sampling_params import SamplingParams


class RequestStatus(enum.Enum):
    """Where a request is in its life."""

    WAITING = "waiting"
    RUNNING = "running"
    PREEMPTED = "preempted"  # back in the waiting queue; its KV blocks were freed
    FINISHED_STOPPED = "stop"
    FINISHED_LENGTH = "length"
    FINISHED_ABORTED = "abort"
    FINISHED_ERROR = "error"

    # Members are singletons compared by identity, so the identity hash is a valid one; Enum's own
    # `__hash__` (hash of the name) is a Python call, paid by every set or dict lookup of a status.
    __hash__ = object.__hash__

    @property
    def finished(self) -> bool:
        return self in _FINISHED


_FINISHED = frozenset({RequestStatus.FINISHED_STOPPED, RequestStatus.FINISHED_LENGTH,
                       RequestStatus.FINISHED_ABORTED, RequestStatus.FINISHED_ERROR})


class Request:
    """One sequence: its tokens, how many of them have KV computed, and its block table.

    The scheduler makes `num_computed_tokens` chase `num_tokens` (vLLM V1 formulation): a step
    computes a slice `all_token_ids[num_computed_tokens : num_computed_tokens + k]`; when the
    slice reaches the end, the model's last logits sample the next token. Prefill, chunked
    prefill, decode and recompute after preemption are all this one rule.

    Args:
        request_id: unique id.
        prompt_token_ids: the prompt, non-empty.
        sampling_params: validated sampling settings.
        arrival: admission order; a smaller value is served first (FCFS), also after preemption.
        eos_token_id: the model's EOS id (None: the model has none).
        max_tokens: most output tokens (already capped by the model length).
        seed: the sampling seed (the engine draws one when the params give none).
    """

    def __init__(self, request_id: str, prompt_token_ids: list[int], sampling_params: SamplingParams,
                 arrival: int, eos_token_id: int | None, max_tokens: int | None = None,
                 seed: int | None = None) -> None:
        if not prompt_token_ids:
            raise ValueError("prompt_token_ids must not be empty")
        self.request_id = request_id
        self.prompt_token_ids = list(prompt_token_ids)
        self.sampling_params = sampling_params
        self.arrival = arrival
        self.eos_token_id = eos_token_id
        self.max_tokens = max_tokens if max_tokens is not None else sampling_params.max_tokens
        self.seed = seed if seed is not None else sampling_params.seed
        self.stop_token_ids = frozenset(sampling_params.stop_token_ids)

        self.output_token_ids: list[int] = []
        self.all_token_ids: list[int] = list(self.prompt_token_ids)
        self.num_computed_tokens = 0
        self.block_ids: list[int] = []
        self.status = RequestStatus.WAITING   # (sets `is_finished` too)
        self.stop_reason: int | str | None = None
        self.num_preemptions = 0
        # Next prompt position whose logprob is still owed (position 0 has none).
        self.next_prompt_logprob_pos = 1
        # Speculative decoding: draft tokens to verify in the next step (after all_token_ids),
        # and the distributions they were drawn from (None: deterministic proposal).
        self.spec_token_ids: list[int] = []
        self.spec_probs = None
        # Structured output: the grammar is complete (only EOS may follow); EOS then stops the
        # request even under min_tokens or ignore_eos, since no other token is legal.
        self.grammar_terminated = False

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.prompt_token_ids)

    @property
    def num_tokens(self) -> int:
        """Prompt plus output tokens."""
        return len(self.all_token_ids)

    @property
    def num_output_tokens(self) -> int:
        return len(self.output_token_ids)

    @property
    def status(self) -> RequestStatus:
        return self._status

    @status.setter
    def status(self, value: RequestStatus) -> None:
        # `is_finished` is a plain attribute kept with the status: the engine reads it several times
        # a request a step, the status changes a few times a request (session 59: ~5.7 reads a
        # request a step at 256 requests, each a Python call as a property).
        self._status = value
        self.is_finished = value in _FINISHED

    def append_output_token(self, token_id: int) -> None:
        """Records one sampled token."""
        self.output_token_ids.append(token_id)
        self.all_token_ids.append(token_id)

    def __repr__(self) -> str:
        return (f"Request({self.request_id!r}, status={self.status.name}, tokens={self.num_tokens}, "
                f"computed={self.num_computed_tokens}, blocks={len(self.block_ids)})")
