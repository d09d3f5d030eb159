# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Session 51's dormant path: DSpark's `dormant_floor` (a stretch holds over its bucket's counts,
`deepinfer_core.Proposer.dormant_floor`), the wrapper's floor where a lookup round could pay, the
re-judgement of a ruled-out pause inside `dormant_rounds`, and the growing pause after a bound's
rule-out (`_bound_pause`)."""

from __future__ import annotations

import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.measured_rates import batch_bucket
from deepinfer_dspark.pause_ledger import bucket_floor, ledger_bucket
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
# As test_decline_features.py: 33 requests and more cannot pay even with every draft accepted; 1-2 can.
SPS = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 400.0, 100.0])
DECODE = SPSProfile([1, 64], [1000.0, 700.0])


def ruled_out(fake_runner, batch: int = 64, **kwargs) -> DSparkProposer:
    """A proposer that judged `batch` requests hopeless (`cannot_pay`): ruled out, paused."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4, **kwargs)
    proposer._last_batch = batch
    assert proposer.cannot_pay(batch) and proposer.idle_rounds() == 4
    return proposer


def test_the_bucket_floor_shares_both_buckets() -> None:
    for n in range(1, 600):
        floor = bucket_floor(n)
        assert ledger_bucket(floor) == ledger_bucket(n) and batch_bucket(floor) == batch_bucket(n)
        assert floor == 1 or ledger_bucket(floor - 1) != ledger_bucket(n)   # the fewest of the bucket
    assert [bucket_floor(n) for n in (1, 2, 3, 4, 6, 8, 12, 40, 64, 65, 256)] == [1, 2, 3, 4, 5, 7, 9, 33, 49, 65, 193]


def test_a_dormant_stretch_holds_down_to_its_buckets_floor(fake_runner) -> None:
    proposer = ruled_out(fake_runner)
    assert proposer.dormant_rounds(64) == 4 and proposer.dormant_floor(64) == 49
    timed = ruled_out(fake_runner, measure_plain_steps=True)   # its stretch samples time each count's steps
    assert timed.dormant_rounds(64) == 4 and timed.dormant_floor(64) == 64
    gapped = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE)
    gapped.feed.gapped.update({"a", "b", "c"})                 # every running request has a gap
    assert gapped.dormant_rounds(3) > 0 and gapped.dormant_floor(3) == 3   # (3 is a bucket of its own)
    drained = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, judge_stragglers=True)
    drained.feed.gapped.update(f"r{i}" for i in range(64))
    for i in range(65):
        drained.track(f"r{i}", [1, 2, 3])
    assert drained.dormant_rounds(64) > 0 and drained.dormant_floor(64) == 64   # requests may join (a server)
    drained.draining(True)
    assert drained.dormant_rounds(64) > 0 and drained.dormant_floor(64) == 64   # one waits: it may join
    drained.remove("r64")                                      # `LLM.generate`, none waiting: finishing
    assert drained.dormant_rounds(64) > 0 and drained.dormant_floor(64) == 49   # leaves gapped ones


def test_one_report_at_the_last_count_records_what_the_counts_one_by_one_would(fake_runner) -> None:
    """At a load the bounds rule out (no steps declined after a measured loss: `_ledger_saved`
    is priced at the report's count, see `dormant_floor`)."""
    whole, parts = ruled_out(fake_runner, measure_round_times=True), ruled_out(fake_runner, measure_round_times=True)
    for proposer in (whole, parts):
        proposer.pauses.pause(64, 40)                          # a long pause at the bucket of 49-64
        assert proposer.dormant_rounds(64) == 40 and proposer.dormant_floor(64) == 49
    whole.dormant_passed(52, 9)
    for count, rounds in ((64, 3), (60, 2), (52, 4)):
        parts.dormant_passed(count, rounds)
    assert whole.rates._since                                  # (counted per power of two: not empty)
    for read in (lambda p: dict(p.pauses._left), lambda p: p.skipped_rounds, lambda p: p.declined_steps,
                 lambda p: p._last_batch, lambda p: dict(p.rates._since), lambda p: p.acceptance.full._now,
                 lambda p: (p._ledger_declined, p._ledger_saved)):
        assert read(whole) == read(parts)


def test_a_gapped_stretch_reported_once_records_what_the_counts_one_by_one_would(fake_runner) -> None:
    """Session 66: a stretch declared for gaps holds down to its bucket's floor as well."""
    whole, parts = (DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, measure_round_times=True,
                                   judge_stragglers=True) for _ in range(2))
    for proposer in (whole, parts):
        proposer.draining(True)
        proposer.feed.gapped.update(f"r{i}" for i in range(64))
        assert proposer.dormant_rounds(64) == 32 and proposer.dormant_floor(64) == 49
    whole.dormant_passed(52, 9)
    for count, rounds in ((64, 3), (60, 2), (52, 4)):
        if count != 64:
            assert parts.dormant_rounds(count) == 32 - 3 - (2 if count == 52 else 0)   # the bucket's pause
        parts.dormant_passed(count, rounds)
    for read in (lambda p: dict(p.pauses._left), lambda p: p.skipped_rounds, lambda p: p.declined_steps,
                 lambda p: p._last_batch, lambda p: dict(p.rates._since), lambda p: p.acceptance.full._now,
                 lambda p: p._gapped_stretch):   # (`_ledger_saved` is priced at the report's count: see
        assert read(whole) == read(parts)           # `dormant_floor`)


def test_a_request_joining_a_gapped_stretch_is_asked_about(fake_runner) -> None:
    """Where a request may join (the engine not draining, or a request waiting), a gapped stretch
    ends when the count drops: the joiner, which has no gap, is asked about at a load that may pay
    (6: bucket 5-6) and captures its features. Draining with none waiting, it holds down to 5."""
    from deepinfer_core.engine.dormant_steps import DormantSteps

    for draining, waiting in ((False, False), (True, True), (True, False)):
        proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, judge_stragglers=True)
        proposer.draining(draining)
        proposer.feed.gapped.update(f"r{i}" for i in range(6))
        for i in range(7 if waiting else 6):
            proposer.track(f"r{i}", [1, 2, 3])
        dormant = DormantSteps(proposer)
        holds = draining and not waiting
        assert not proposer.cannot_pay(6) and dormant.step(6) and dormant.floor == (5 if holds else 6)
        proposer.remove("r0")
        dormant.ran(5)                                         # a gapped request finished
        if not holds:                                          # r6 joins: asked, 5 gapped of 6
            assert not dormant.step(6) or dormant.features     # its features captured
            assert proposer.dormant_rounds(6) == 0


def test_the_wrapper_raises_the_floor_where_a_lookup_round_could_pay(fake_runner) -> None:
    lookup = LookupAssist(ruled_out(fake_runner), 2)
    assert lookup.inner.dormant_rounds(64) == 4
    lookup._could = {n: n <= 52 for n in range(1, 65)}         # (memoized `_could_pay`: lookups pay up to 52)
    assert lookup.dormant_floor(64) == 53
    lookup._could = {n: False for n in range(1, 65)}
    assert lookup.dormant_floor(64) == 49                      # DSpark's own
    lookup._could[64] = True
    assert lookup.dormant_floor(64) == 64


def test_a_ruled_out_pause_that_ran_out_is_judged_again_at_the_ask(fake_runner) -> None:
    proposer = ruled_out(fake_runner)
    proposer.dormant_passed(64, 4)                             # the pause ran out; still ruled out
    assert proposer.pauses.left(64) == 0 and ledger_bucket(64) in proposer._ruled_out
    assert proposer.dormant_rounds(64) == 8                    # judged here: a new (doubled) pause, dormant
    timed = ruled_out(fake_runner, measure_plain_steps=True)
    timed.dormant_passed(64, 4)
    assert timed.dormant_rounds(64) == 0                       # asked step by step there, as before


def test_a_bound_rule_out_pauses_longer_only_where_the_bound_loses_by_a_wide_margin(fake_runner) -> None:
    from deepinfer_dspark.bound_pauses import ROBUST_GAIN

    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4)
    assert proposer._bound_gain(64) <= ROBUST_GAIN < proposer._bound_gain(2)   # 64: 0.71 with every draft accepted

    def rule_outs(batch: int, count: int = 5) -> list[int]:
        proposer._last_batch, pauses = batch, []
        for _ in range(count):
            pauses.append(proposer.idle_rounds())
            proposer.idle_round(batch)
            proposer.pauses.pause(batch, 0)                    # (as if its rounds ran out)
        return pauses
    assert rule_outs(64) == [4, 8, 16, 16, 16]                 # doubling up to 4 x probe_every
    verdict = [True]
    proposer.expected_loss = lambda batch: verdict[0]
    assert rule_outs(2, 3) == [4, 4, 4]                           # a loss by a hair: judged again every 4
    verdict[0] = False
    assert proposer.idle_rounds() == 0 and ledger_bucket(2) not in proposer._ruled_out
    proposer._bound_backoff[64] = proposer._bound_backoff[1] = 16
    requests = [DraftRequest("r0", list(range(10)), K, 0.0, 0, 1.0, 0.0, 0, 40)]
    proposer.observe_step(["r0"], [0], [9], [0], torch.ones(9, 2))
    proposer._last_batch = 1
    assert any(d.token_ids for d in proposer.propose(requests))   # a drafted round at 1 ...
    assert 64 in proposer._bound_backoff and 1 not in proposer._bound_backoff   # ... resets its own bucket only
