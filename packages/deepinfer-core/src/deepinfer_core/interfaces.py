# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What sibling packages may rely on besides `deepinfer_core.__all__`.

Data types of requests and outputs, the progress-callback shape, and the Protocols plug-ins
implement. Everything else in deepinfer_core is private.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from deepinfer_core.outputs import CompletionOutput, Logprob, RequestMetrics, RequestOutput
from deepinfer_core.sampling_params import SamplingParams

# on_progress(done_requests, total_requests, new_tokens_this_step), called after every step.
ProgressCallback = Callable[[int, int, int], None]


@runtime_checkable
class Proposer(Protocol):
    """A speculative-decoding draft source (entry-point group `deepinfer.proposers`).

    Draft interface: the verification loop that consumes it lands with the speculative
    decoding issue and may extend it.
    """

    def propose(self, request_id: str, token_ids: list[int], num_tokens: int) -> list[int]:
        """Up to `num_tokens` draft tokens continuing `token_ids` (prompt + output so far)."""
        ...


__all__ = [
    "CompletionOutput",
    "Logprob",
    "ProgressCallback",
    "Proposer",
    "RequestMetrics",
    "RequestOutput",
    "SamplingParams",
]
