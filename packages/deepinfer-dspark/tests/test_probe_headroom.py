# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`speculative_config.probe_headroom`: every pause a loss sets above `bound_only` is priced at the
probes' share times what the bounds say drafting could still gain there (`probe_headroom.py`,
`PausePolicy._repeat_share`, `PausePolicy._young_pause`)."""

from __future__ import annotations

import math

import pytest

from deepinfer_dspark.draft_costs import LONGEST_PROBE_PAUSE, PROBE_SHARE
from deepinfer_dspark.factories import HEADROOM_DEFAULT, dspark_factory
from deepinfer_dspark.pause_policy import SETTLED_ROUNDS
from deepinfer_dspark.probe_headroom import MIN_HEADROOM_SCALE, check_headroom, headroom_scale
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

DECODE = SPSProfile([1, 8], [1000.0, 1000.0])
NARROW = SPSProfile([5, 40], [500.0, 260.0])   # k = 4: a full round at 8 gains 1.3x, two drafts lose
LOSING = SPSProfile([5, 40], [500.0, 120.0])   # ... a full round at 8 loses (0.6x)


def test_the_scale_is_the_headroom_over_h_clamped() -> None:
    assert headroom_scale(1.25, 0.5) == pytest.approx(0.5)
    assert headroom_scale(1.1, 0.4) == pytest.approx(0.25)
    assert headroom_scale(2.0, 0.5) == 1.0
    for low in (1.0, 0.6, 1.01, -3.0, math.nan, -math.inf):
        assert headroom_scale(low, 0.5) == MIN_HEADROOM_SCALE
    assert headroom_scale(math.inf, 0.5) == 1.0
    assert MIN_HEADROOM_SCALE == 1 / 16   # (the longest stretch a pause gets: 16x)


def test_bad_headrooms_name_the_key() -> None:
    assert check_headroom(1) == 1.0 and isinstance(check_headroom(1), float)
    for bad in (0, -0.5, math.nan, math.inf, True, "0.5", None):
        with pytest.raises(ValueError, match=r"^speculative_config.probe_headroom: must be a finite number > 0"):
            check_headroom(bad)


def proposer(fake_runner, sps: SPSProfile, headroom: float | None) -> DSparkProposer:
    p = DSparkProposer(fake_runner(4, 0.3), 4, sps, decode=DECODE)
    p.probe_headroom = headroom
    return p


def pauses_after_losses(p: DSparkProposer, losses: int, opening: bool = False, batch: int = 8) -> list[int]:
    """Judges losing rounds (two drafts a request) at `batch` until one more settles the bucket, then
    `losses` more, each after the pause the one before left ran out: the pause each set."""
    ledger = p.openings.ledger if opening else p.pauses
    while ledger.rounds(batch) < SETTLED_ROUNDS - 1:
        p._plan_pause(2.0, [2] * batch, batch, opening=opening)
        ledger.pause(batch, 0)
    out = []
    for _ in range(losses):
        p._plan_pause(2.0, [2] * batch, batch, opening=opening)
        assert p.judged[4] < 1.0
        out.append(ledger.left(batch))
        ledger.pause(batch, 0)
    return out


@pytest.mark.parametrize("opening", [False, True])
def test_a_narrow_headroom_stretches_the_settled_pause(fake_runner, opening: bool) -> None:
    """At 8 requests the bound reads 1.3: with h 0.5 the share is 0.6 of `probe_share`, so each settled
    pause is the probe pause at that share (longer than the plain one, which the backoff's 256 sets
    here); with h 0.25 the headroom clears h and nothing changes."""
    plain = pauses_after_losses(proposer(fake_runner, NARROW, None), 3, opening)
    narrow = proposer(fake_runner, NARROW, 0.5)
    assert narrow._bound_gain(8) == pytest.approx(1.3)
    stretched = pauses_after_losses(narrow, 3, opening)
    assert len(set(plain)) == 1 and plain[0] < LONGEST_PROBE_PAUSE // 2
    priced = narrow.costs.probe_pause(8, narrow.judged[4], narrow._probe_overhead(8), share=PROBE_SHARE * 0.6)
    if opening:   # (an opening's gain is judged against what skipping it is worth: `OpeningPhase`)
        priced = narrow._settled_pause(narrow.openings.ledger, 8, narrow.judged[4] / narrow.openings.worth_skipping)
    assert stretched == [priced] * 3 and priced > plain[0], (plain, stretched)
    assert pauses_after_losses(proposer(fake_runner, NARROW, 0.25), 3, opening) == plain


def test_no_headroom_pauses_sixteen_times_longer_at_most(fake_runner) -> None:
    """Where the bounds cannot pay (bound 0.6 at 8: the load is ruled out anyway) the scale is its floor:
    the settled pause is the plain one times 16, capped at `LONGEST_PROBE_PAUSE`."""
    plain = pauses_after_losses(proposer(fake_runner, LOSING, None), 1)[0]
    floored = proposer(fake_runner, LOSING, 0.5)
    assert floored._repeat_share(floored.pauses, 8) == pytest.approx(PROBE_SHARE * MIN_HEADROOM_SCALE)
    got = pauses_after_losses(floored, 1)[0]
    assert got == min(LONGEST_PROBE_PAUSE, got) and got >= min(LONGEST_PROBE_PAUSE, 16 * plain - 16)


def test_the_young_opening_pause_is_scaled_too(fake_runner) -> None:
    """An opening's first losing round (its ledger young) pauses for its own loss at the scaled share:
    the plain pause over 0.6, within the roundings of the two."""
    plain, narrow = proposer(fake_runner, NARROW, None), proposer(fake_runner, NARROW, 0.5)
    for p in (plain, narrow):
        p._plan_pause(2.0, [2] * 8, 8, opening=True)
    before, after = plain.openings.ledger.left(8), narrow.openings.ledger.left(8)
    assert before > 8 and (before - 1) / 0.6 <= after <= before / 0.6 + 1, (before, after)


def test_nothing_changes_up_to_bound_only_or_without_the_key(fake_runner) -> None:
    p = proposer(fake_runner, NARROW, 0.5)
    p.bound_only = 8
    assert p._repeat_share(p.pauses, 8) is None and p._repeat_share(p.pauses, 9) is not None
    p.probe_headroom = None
    assert p._repeat_share(p.pauses, 9) is None


def test_with_the_share_floor_the_two_multiply(fake_runner) -> None:
    p = proposer(fake_runner, NARROW, 0.5)
    p.probe_share_floor = 0.005
    pauses_after_losses(p, 2)
    assert p.pauses.repeats(8) == 2
    assert p._repeat_share(p.pauses, 8) == pytest.approx(max(0.005, PROBE_SHARE / 4) * 0.6)


def test_the_factory_key(tmp_path) -> None:
    base = {"model": str(tmp_path), "scheduling": "confidence", "sps_profile": NARROW, "decode_profile": DECODE}
    assert dspark_factory.validate(base)["probe_headroom"] == HEADROOM_DEFAULT == 0.5   # (session 83's default)
    assert dspark_factory.validate({**base, "probe_headroom": None})["probe_headroom"] == HEADROOM_DEFAULT
    assert dspark_factory.validate({**base, "probe_headroom": 0.25})["probe_headroom"] == 0.25
    assert dspark_factory.validate({**base, "probe_headroom": 0})["probe_headroom"] is None   # (off)
    assert dspark_factory.validate({**base, "probe_headroom": 0.0})["probe_headroom"] is None
    no_decode = {k: v for k, v in base.items() if k != "decode_profile"}
    assert dspark_factory.validate(no_decode)["probe_headroom"] is None   # (nothing to price it with)
    for bad in (-1, -0.5, math.nan, math.inf, True, False, "0.5"):
        with pytest.raises(ValueError, match=r"^speculative_config.probe_headroom: must be a finite number > 0"):
            dspark_factory.validate({**base, "probe_headroom": bad})
    with pytest.raises(ValueError, match="^speculative_config.probe_headroom: prices .*decode_profile"):
        dspark_factory.validate(no_decode | {"probe_headroom": 0.5})
    with pytest.raises(ValueError, match="^speculative_config.probe_headroom: only used with scheduling"):
        dspark_factory.validate({"model": str(tmp_path), "scheduling": "fixed", "probe_headroom": 0.5})


def test_the_bench_variants_with_and_without_it(folders, kit, benchmark_script) -> None:
    """`confidence-headroom` asks for the default's 0.5, `confidence-no-headroom` turns it off
    (0): the engine the default was until session 83."""
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    variants = benchmark_script("bench_variants")
    configs = variants.variant_configs(str(drafter), [4], spec["sps_profile"], spec["decode_profile"])
    assert configs["confidence-headroom"] == {**configs["confidence"], "probe_headroom": 0.5}
    assert configs["confidence-no-headroom"] == {**configs["confidence"], "probe_headroom": 0}
    assert {"confidence-headroom", "confidence-no-headroom"} <= set(variants.NAMED) & set(variants.BY_NAME_ONLY)
    assert kit.dspark_proposer(target, configs["confidence-no-headroom"]).probe_headroom is None


def test_the_engine_passes_the_headroom_to_the_pause_policy(folders, kit) -> None:
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    assert "decode_profile" in spec   # (the default applies only with one)
    assert kit.dspark_proposer(target, spec).probe_headroom == HEADROOM_DEFAULT
    assert kit.dspark_proposer(target, {**spec, "probe_headroom": 0.25}).probe_headroom == 0.25
    assert kit.dspark_proposer(target, {**spec, "probe_headroom": 0}).probe_headroom is None
