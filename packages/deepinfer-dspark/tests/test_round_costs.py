# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`RoundCosts`: a lookup round's extra cost against the H200's step logs (session 30)."""

from __future__ import annotations

import pytest

from deepinfer_dspark.round_costs import H200_ROUND_COSTS, RoundCosts

# (requests, in a run, after a plain step, the plain step after a run): the medians' ranges over
# calls 4, 6 and 7 of benchmarks/results/h200-2026-12-02g, in plain steps.
MEASURED = [(1, (0.65, 0.77), (1.58, 1.80), (0.42, 0.49)),
            (2, (0.82, 0.91), (1.68, 1.80), (0.34, 0.45)),
            (8, (1.10, 1.16), (2.01, 2.07), (0.27, 0.37))]


@pytest.mark.parametrize("batch, in_run, start, after", MEASURED)
def test_the_fit_stays_within_what_the_h200_measured(batch, in_run, start, after) -> None:
    costs = H200_ROUND_COSTS
    assert in_run[0] - 0.05 <= costs.round(batch, True) <= in_run[1] + 0.05
    assert start[0] - 0.05 <= costs.round(batch, False) <= start[1] + 0.05
    assert after[0] - 0.05 <= costs.saving(batch) <= after[1] + 0.05


def test_a_lone_round_is_dearer_than_one_in_a_run_and_the_gap_is_the_wait() -> None:
    costs = RoundCosts(in_run=0.5, in_run_per_doubling=0.0, start=1.0, after=0.3, after_per_doubling=0.0)
    assert costs.priced(4, True) == pytest.approx(0.5)
    assert costs.priced(4, False) == pytest.approx(0.5 + 1.0 - 0.3)
    # Growth with the batch, floored at 0.
    grown = RoundCosts(in_run=0.5, in_run_per_doubling=0.25, start=0.0, after=0.4, after_per_doubling=-0.5)
    assert grown.round(8, True) == pytest.approx(1.25) and grown.saving(8) == 0.0 and grown.saving(1) == 0.4


@pytest.mark.parametrize("field", ["in_run", "start", "after"])
def test_a_negative_cost_is_refused_by_name(field) -> None:
    with pytest.raises(ValueError, match=f"RoundCosts.{field}"):
        RoundCosts(**{field: -0.1})
