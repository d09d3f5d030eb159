# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`rescale_stragglers`: a ledger's average held at the straggler factor its bucket reads now
(`PauseLedger.rescale`, `StragglerJudgement._rescale_ledger`)."""

from __future__ import annotations

import random

import pytest

from deepinfer_dspark.pause_ledger import PauseLedger
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile


def test_rescaling_equals_judging_every_round_at_the_new_factor() -> None:
    """The average is linear in the rounds' gains (the first rounds' mean, then the moving average),
    so rounds judged at one factor and rescaled to another read as rounds judged at the other, at
    any count of rounds; other buckets keep theirs; the factor is remembered per bucket."""
    rng = random.Random(71)
    for count in (1, 5, 70, 200):
        gains = [rng.uniform(0.5, 1.6) for _ in range(count)]
        first, second = rng.uniform(0.3, 1.0), rng.uniform(0.3, 1.0)
        moved, direct = PauseLedger(8, 256), PauseLedger(8, 256)
        moved.rescale(8, first)
        for g in gains:
            moved.judge(8, g * first)
            direct.judge(8, g * second)
        moved.judge(2, 1.5)
        moved.rescale(8, second)
        assert moved.gain(8) == pytest.approx(direct.gain(8), rel=1e-12)
        assert moved.rounds(8) == direct.rounds(8) == count
        assert moved.gain(2) == 1.5   # another bucket: untouched
        moved.rescale(8, 1.0)   # back to no straggler at all: the rounds' own gains
        plain = PauseLedger(8, 256)
        for g in gains:
            plain.judge(8, g)
        assert moved.gain(8) == pytest.approx(plain.gain(8), rel=1e-12)


def test_a_bucket_without_rounds_only_remembers_the_factor() -> None:
    ledger = PauseLedger(8, 256)
    for bad in (0.0, -0.5, float("nan")):
        with pytest.raises(ValueError, match="factor"):
            ledger.rescale(4, bad)
    ledger.rescale(4, 0.5)
    assert ledger.gain(4) is None and ledger.rounds(4) == 0
    ledger.judge(4, 0.8)
    ledger.rescale(4, 1.0)   # judged at 0.5: 0.8 then is 1.6 without a straggler
    assert ledger.gain(4) == pytest.approx(1.6)


def proposer(fake_runner, rescale: bool) -> DSparkProposer:
    p = DSparkProposer(fake_runner(4, 0.9), 4, SPSProfile([5, 40], [500.0, 200.0]),
                       decode=SPSProfile([1, 8], [1000.0, 1000.0]), judge_stragglers=True)
    p.rescale_stragglers = rescale
    p.draining(True)
    return p


@pytest.mark.parametrize("opening", [False, True])
def test_rounds_judged_before_the_factor_no_longer_hold_a_losing_load_open(fake_runner, opening: bool) -> None:
    """Rounds judged at factor 1.0 (no finished requests yet) put a bucket's average above 1; then
    the sample's factor reads so low that the same rounds lose. With `rescale_stragglers` the first
    such round pauses the bucket (the average, rescaled, loses too); without it the stale average
    keeps the load drafting (H100, session 70: a run of five losing opening rounds at 8 requests)."""
    left = {}
    for rescale in (False, True):
        p = proposer(fake_runner, rescale)
        ledger = p.openings.ledger if opening else p.pauses
        for _ in range(6):
            p._plan_pause(12.0, [4] * 4, 4, opening=opening)
        before = ledger.gain(4)
        judged = p.judged[4]
        assert p.judged_straggler == 1.0 and before > 1.0 and judged > 1.0
        factor = 0.9 / judged   # the same round now judged at 0.9
        p.stragglers.factor = lambda batch: factor
        p._plan_pause(12.0, [4] * 4, 4, opening=opening)
        assert p.judged[4] == pytest.approx(0.9)
        after = ledger.gain(4)
        if not opening:   # (an opening's ledger value is the judged gain over `worth_skipping`)
            want = factor * (6 * before + judged) / 7 if rescale else (6 * before + 0.9) / 7
            assert after == pytest.approx(want)
        assert (after <= 1.0) == rescale
        left[rescale] = ledger.left(4)
    assert left == {False: 0, True: left[True]} and left[True] > 0


def test_the_rescale_stragglers_key(folders, kit, benchmark_script) -> None:
    """`speculative_config.rescale_stragglers` (session 71's candidate): off by default, set on the
    proposer under the prompt-lookup wrapper, checked as a bool and confidence-only;
    `confidence-rescale` asks for it."""
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    assert kit.dspark_proposer(target, spec).rescale_stragglers is False
    assert kit.dspark_proposer(target, {**spec, "rescale_stragglers": True}).rescale_stragglers is True
    kit.rejects_bool_key(target, drafter, "rescale_stragglers")
    variants = benchmark_script("bench_variants")
    configs = variants.variant_configs(str(drafter), [4], spec["sps_profile"], spec["decode_profile"])
    assert configs["confidence-rescale"]["rescale_stragglers"] is True
    assert "rescale_stragglers" not in configs["confidence"]
    assert "confidence-rescale" in set(variants.NAMED) & set(variants.BY_NAME_ONLY)
    assert configs["confidence-probe16"] == {**configs["confidence"], "probe_every": 16}   # session 75's candidate
    assert "probe_every" not in configs["confidence"] and "confidence-probe16" in variants.BY_NAME_ONLY
    assert kit.dspark_proposer(target, configs["confidence-probe16"]).probe_every == 16
    assert kit.dspark_proposer(target, configs["confidence"]).probe_every == 8
    assert configs["confidence-lease32"] == {**configs["confidence"], "lease_rounds": 32}   # session 79's candidate
    assert "lease_rounds" not in configs["confidence"] and "confidence-lease32" in variants.BY_NAME_ONLY
    assert kit.dspark_proposer(target, configs["confidence-lease32"]).lease_rounds == 32
    assert kit.dspark_proposer(target, configs["confidence"]).lease_rounds == 8


def test_other_decisions_read_the_body_average_at_the_factor_now(fake_runner) -> None:
    """`_body_loses` (read while openings are judged) sees the settled body average at the factor
    read now, not as last judged; when the drain ends (factor 1.0) the average reads as judged again."""
    loses = {}
    for rescale in (False, True):
        p = proposer(fake_runner, rescale)
        for _ in range(8):   # `SETTLED_ROUNDS` body rounds at factor 1.0
            p._plan_pause(12.0, [4] * 4, 4)
        judged = p.pauses.gain(4)
        assert judged > 1.0 and not p._body_loses(4)
        p.stragglers.factor = lambda batch: 0.9 / judged
        loses[rescale] = p._body_loses(4)
        if rescale:
            assert p.pauses.gain(4) == pytest.approx(0.9)
            p.draining(False)
            assert not p._body_loses(4) and p.pauses.gain(4) == pytest.approx(judged)
    assert loses == {False: False, True: True}
