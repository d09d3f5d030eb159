# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`LookupAssist`'s tail weights (while the engine is `draining`) and `RoundCosts`' validation: what session 30's
review helper found (an empty tail, NaN growth, tail weights built for rounds that never read them)."""

from __future__ import annotations

import math

import pytest
import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.no_drafter import NoDrafter
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.round_costs import RoundCosts
from deepinfer_dspark.sps import SPSProfile

K = 4
FLAT = SPSProfile([1, 64], [1000.0, 1000.0])


def ask(request_id: str, tokens: list[int]) -> DraftRequest:
    return DraftRequest(request_id, tokens, K, 0.0, 0, 1.0, 0.0, 0, 10)


def test_propose_over_untracked_requests_does_not_raise() -> None:
    """`propose` skips requests it never tracked (`ctx is None`), tail weights on or not (an
    empty tail once raised `min() arg is an empty sequence`)."""
    lookup = LookupAssist(NoDrafter(K, FLAT), 2)
    lookup.draining(True)
    drafts = lookup.propose([ask("a", [1, 2, 3, 1, 2]), ask("b", [4, 5, 6])])
    assert [d.token_ids for d in drafts] == [[], []]


@pytest.mark.parametrize("field", ["in_run_per_doubling", "after_per_doubling"])
def test_a_nan_growth_is_refused_by_name(field) -> None:
    """NaN growth is refused (`max(0.0, nan)` would turn it into 0 and, with in_run_per_doubling
    NaN, price a lone round below a plain step)."""
    with pytest.raises(ValueError, match=f"RoundCosts.{field}"):
        costs = RoundCosts(**{field: math.nan})
        assert costs.priced(1, False) > 0   # (what it gets wrong if accepted)


def test_propose_does_not_weigh_the_tail_when_no_lookup_draft_was_found(fake_runner, monkeypatch) -> None:
    """DSpark drafts every one of 64 running requests (none waiting): no lookup draft is
    possible, and `propose` builds no tail weights (over 64 views ~17 us on this CPU): they are
    read only when lookup drafts alone make the round."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPSProfile([1, 5, 64, 320], [500.0] * 4), decode=FLAT)
    lookup = LookupAssist(proposer, 2, check_every=1)
    lookup.draining(True)
    ids = [f"r{i}" for i in range(64)]
    views = {rid: [1, 2, 3, 4, 5] for rid in ids}
    for rid in ids:
        lookup.track(rid, views[rid])
    proposer.observe_step(ids, [0] * 64, [5] * 64, list(range(0, 320, 5)), torch.ones(320, 2))
    for rid in ids:
        views[rid].append(6)
    calls = []
    original = LookupAssist._tail
    monkeypatch.setattr(LookupAssist, "_tail", lambda self, batch: calls.append(batch) or original(self, batch))
    drafts = lookup.propose([ask(rid, list(views[rid])) for rid in ids])
    assert all(d.token_ids for d in drafts)   # DSpark drafted for every request
    assert calls == []


def test_a_round_is_never_priced_below_the_step_it_replaces() -> None:
    """A saving larger than the round's cost floors `priced` at 0 (a round with nothing accepted
    must not look like a gain)."""
    costs = RoundCosts(in_run=0.0, in_run_per_doubling=0.0, start=0.0, after=5.0, after_per_doubling=0.0)
    assert costs.priced(2, False) == 0.0
    lookup = LookupAssist(NoDrafter(K, FLAT), 2, costs=costs)
    assert not lookup.pays(2, [(K, 0.0)])


def test_tail_weights_apply_only_while_the_engine_drains() -> None:
    """Without a queue, an offline batch's tail and a server whose clients cap their concurrency
    look alike (weighing the latter as a tail cost 4-5 points at 2-4 requests in the review
    helper's replay): the weights apply only while the engine says it is `draining`
    (`LLM.generate`), and never with `tail=False`."""
    lookup = LookupAssist(NoDrafter(K, FLAT), 2)
    views = {"a": [1, 2, 3], "b": [4, 5, 6]}
    for rid, view in views.items():
        lookup.track(rid, view)
    views["a"] += [7] * 10
    assert lookup._tail(2) == {}
    lookup.draining(True)
    assert lookup._tail(2)["a"] < 1.0
    lookup.draining(False)
    assert lookup._tail(2) == {}
    off = LookupAssist(NoDrafter(K, FLAT), 2, tail=False)
    for rid, view in views.items():
        off.track(rid, view)
    off.draining(True)
    assert off._tail(2) == {}
