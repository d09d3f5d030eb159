# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The speculative decoder's value types: per-request counters (`SpecStats`), the token view
proposers read (`TokenView`), and which requests may be drafted for (`spec_eligible`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepinfer_core.engine.request import Request


@dataclasses.dataclass
class SpecStats:
    """Speculation counters of one request (or of the engine, summed).

    Attributes:
        proposed: draft tokens the proposer returned.
        verified: draft tokens the target scored (proposed minus those the budget dropped).
        accepted: draft tokens accepted.
        rounds: verification steps (each emits accepted + 1 tokens unless a stop cuts it).
        accepted_by_position: accepted[k] counts acceptances of the (k+1)-th draft position.
        verified_by_position: verified[k] counts (k+1)-th draft positions scored.
    """

    proposed: int = 0
    verified: int = 0
    accepted: int = 0
    rounds: int = 0
    accepted_by_position: list[int] = dataclasses.field(default_factory=list)
    verified_by_position: list[int] = dataclasses.field(default_factory=list)

    @property
    def mean_accepted_length(self) -> float:
        """Tokens emitted per verification round, bonus included (DSpark paper convention)."""
        return (self.accepted + self.rounds) / self.rounds if self.rounds else 0.0

    def add(self, num_verified: int, num_accepted: int) -> None:
        self.verified += num_verified
        self.accepted += num_accepted
        self.rounds += 1
        for counts, n in ((self.verified_by_position, num_verified), (self.accepted_by_position, num_accepted)):
            counts.extend([0] * (n - len(counts)))
            for k in range(n):
                counts[k] += 1


class TokenView(Sequence):
    """A read-only view of a request's token list, handed to proposers (`DraftRequest.token_ids`):
    indexing, slicing (a copy), `len` and iteration, no copy of the whole list per step."""

    __slots__ = ("_ids",)

    def __init__(self, ids: list[int]) -> None:
        self._ids = ids

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, index):
        return self._ids[index]

    def __iter__(self):
        return iter(self._ids)


def spec_eligible(request: Request) -> bool:
    """Whether the request may be drafted for (its sampling is a pure function of one row's logits)."""
    p = request.sampling_params
    return (not p.has_penalties and p.structured_outputs is None
            and request.num_output_tokens >= p.min_tokens)
