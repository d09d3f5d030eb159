# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""RoundCosts: what a verification round with prompt-lookup drafts costs beyond a plain step.

Measured, not modelled: the H200's step logs of session 30 (`benchmarks/results/h200-2026-12-02g`,
calls 4, 6 and 7; SmolLM2-135M, bf16, CUDA graphs; medians over 46-650 rounds a cell), in plain
steps at the batch (~1.0 ms from 1 to 32 requests):

    requests                          1            2            8
    a round that extends a run        +0.65-0.77   +0.82-0.91   +1.10-1.16
    a round after a plain step        +1.58-1.80   +1.68-1.80   +2.01-2.07
    the plain step after a run        -0.42-0.49   -0.34-0.45   -0.27-0.37

A round after a plain step waits for that step, still on the GPU while the host would launch the
next (core overlaps the host with the device for plain steps; a round needs the ids before it to
search and to build its inputs): ~0.92 step more. The plain step after a run is launched with
nothing in flight and costs less. Session 29 priced every round at the mean (+1.15) less 0.35
when alone (+0.8), where a lone round costs +1.1 at 1 request and +1.7 at 8: call 4's lone rounds
(111 of 224 runs at 8 requests) lost. The two grow with log2 of the batch (fit to the medians).
Device-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class RoundCosts:
    """Extra cost of a lookup round, in plain steps at 1 request.

    Attributes:
        in_run: a round right after another round, at 1 request.
        in_run_per_doubling: its growth per doubling of the running requests.
        start: what a round right after a plain step costs more than one in a run.
        after: what the plain step after a run costs less, at 1 request.
        after_per_doubling: its change per doubling of the running requests.
    """

    in_run: float = 0.67
    in_run_per_doubling: float = 0.155
    start: float = 0.92
    after: float = 0.46
    after_per_doubling: float = -0.04

    def __post_init__(self) -> None:
        for name in ("in_run", "in_run_per_doubling", "start", "after", "after_per_doubling"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ValueError(f"RoundCosts.{name}: must be a finite number, got {value}")
            if name in ("in_run", "start", "after") and value < 0:
                raise ValueError(f"RoundCosts.{name}: must be >= 0, got {value}")

    def round(self, batch: int, in_run: bool) -> float:
        """Plain 1-request steps a round at `batch` running requests costs beyond the plain step
        it replaces; `in_run`: the step before it was a round too. Never below 0."""
        extra = self.in_run + self.in_run_per_doubling * math.log2(max(batch, 1))
        return max(0.0, extra + (0.0 if in_run else self.start))

    def saving(self, batch: int) -> float:
        """Plain 1-request steps the plain step after a run at `batch` requests costs less (>= 0)."""
        return max(0.0, self.after + self.after_per_doubling * math.log2(max(batch, 1)))

    def priced(self, batch: int, in_run: bool) -> float:
        """What deciding on a round costs: `round`, less the `saving` of the step after the run
        when the round starts one (a run of any length gets that saving once). Never below 0: a
        round never costs less than the plain step it replaces."""
        return max(0.0, self.round(batch, in_run) - (0.0 if in_run else self.saving(batch)))


H200_ROUND_COSTS = RoundCosts()
