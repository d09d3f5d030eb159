# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""NoDrafter: the proposer under load-aware prompt lookup (`ngram` with `scheduling: load_aware`).

Prompt lookup every step (core's `ngram` method, vLLM's) pays where the GPU has room and costs
where it has none: on the H200 (session 29, BENCHMARKS.md) `ngram-7` ran 1.14-1.22x plain
decoding at 1 request and 0.85-0.88 / 0.56 / 0.51x at 8 / 32 / 64. `LookupAssist` takes a lookup
round only where it pays (`LookupAssist.pays`: the expected accepted drafts against the round's
measured cost, per match-length class); it drafts where the proposer it wraps drafts nothing.
This is that proposer for a deployment without a drafter: it never drafts and is always paused
(every round idle, every stretch dormant until the wrapper cuts it), so every draft is
`LookupAssist`'s. Device-free.

Args:
    num_tokens: k, the most drafts a request gets a round.
    decode: the plain decode steps' profile (`SPSProfile`, batch tokens = requests), or None:
        `LookupAssist.pays` then prices a round in plain steps at any batch size.
"""

from __future__ import annotations

from deepinfer_core.interfaces import Draft, DraftRequest

from deepinfer_dspark.sps import SPSProfile

STRETCH = 1 << 20   # rounds a dormant stretch declares (the wrapper cuts it where a lookup may pay)


class NoDrafter:
    """A proposer that drafts nothing and is always paused (see the module docstring)."""

    def __init__(self, num_tokens: int, decode: SPSProfile | None = None) -> None:
        if num_tokens < 1:
            raise ValueError(f"num_tokens: must be >= 1, got {num_tokens}")
        self.num_tokens, self.decode, self.batch = num_tokens, decode, 0

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        self.batch = len(requests)
        return [Draft([]) for _ in requests]

    def idle_rounds(self) -> int:
        return 1

    def wants_features(self) -> bool:
        """Never: it reads no target features (and core's read of a missing method through
        `LookupAssist` raised and caught an AttributeError, ~1.2 us, every step not dormant)."""
        return False

    def idle_round(self, num_requests: int) -> None:
        self.batch = num_requests

    def dormant_rounds(self, num_requests: int) -> int:
        self.batch = num_requests
        return STRETCH

    def quiet_rounds(self, num_requests: int) -> int:
        return 0

    def dormant_passed(self, num_requests: int, rounds: int) -> None:
        self.batch = num_requests

    def quiet_passed(self, num_requests: int, rounds: int) -> None:
        self.batch = num_requests

    def running(self, num_requests: int) -> None:
        self.batch = num_requests

    def commit(self, request_id: str, num_tokens: int) -> None:
        pass

    def remove(self, request_id: str) -> None:
        pass
