# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`speculative_config.resume_bound` (session 77's candidate): above `bound_only` requests the
measured acceptance's bound (`PausePolicy.expected_loss`) also pays a resumption, its tokens scaled
by the share of a `RESUMED_RUN_ROUNDS`-round run's time its rounds take (`_resumed_share`)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from deepinfer_dspark.draft_costs import probe_overhead
from deepinfer_dspark.factories import dspark_factory
from deepinfer_dspark.pause_policy import RESUMED_RUN_ROUNDS, RUN_TRANSITION_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
ROUND_RATE = 400.0                                    # rounds/s of 8 requests (40 tokens)
ROUNDS = SPSProfile([5, 40], [900.0, ROUND_RATE])
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])         # plain steps/s


def proposer(fake_runner, upper: float, resume: bool, bound_only: int = 1) -> DSparkProposer:
    """A proposer whose measured acceptance's upper bound is `upper` accepted drafts a request."""
    p = DSparkProposer(fake_runner(K, 0.5), K, ROUNDS, decode=DECODE, bound_only=bound_only)
    p.acceptance = SimpleNamespace(full=SimpleNamespace(most=100.0, upper=lambda: upper), body_requests=50,
                                   replies=10, ratio=p.acceptance.ratio)
    p.resume_bound = resume
    return p


def test_the_share_is_a_run_over_the_run_and_its_resumption(fake_runner) -> None:
    """R s / (R s + O + T s) = 80 / (80 + 2.5 + 2.5): s = 2.5 plain steps a round, R = 32 rounds, O
    the probe's modelled overhead at 8 requests (rounds untimed here), T one round."""
    assert (RESUMED_RUN_ROUNDS, RUN_TRANSITION_ROUNDS, probe_overhead(8)) == (32, 1.0, 2.5)
    assert proposer(fake_runner, 1.0, True)._resumed_share(8) == pytest.approx(80 / 85, rel=1e-12)


@pytest.mark.parametrize("transition", [False, True])
def test_timed_rounds_count_the_measured_flush_and_the_transition_once(fake_runner, transition) -> None:
    """With the rounds timed and a measured flush of 4 ms (capped at a round, 2.5 plain steps), O =
    `SYNC_STEPS` + 2.5 = 3.5 plain steps, and the transition counts once with or without
    `probe_transition` (which adds it to `_probe_overhead`): 80 / (80 + 3.5 + 2.5)."""
    p = proposer(fake_runner, 1.0, True)
    p.probe_transition = transition
    p._rounds_timed = lambda batch: True
    p.flush_costs.extra = lambda batch: 0.004
    assert p._probe_overhead(8) == pytest.approx(3.5 + (2.5 if transition else 0.0))
    assert p._resumed_share(8) == pytest.approx(80 / 86, rel=1e-12)


def test_a_draining_batch_pays_its_straggler_and_the_resumption(fake_runner) -> None:
    """At 2.0 accepted drafts the bound's gain is 1.2: a straggler factor of 0.9 leaves 1.08, and 1.016
    with the resumption (x 80 / 85): both pay; 0.85 leaves 1.02, and 0.96 with the resumption: ruled
    out only with it. `_bound_gain` reads the same bound."""
    for factor, plain, resumed in ((0.9, False, False), (0.85, False, True)):
        for resume, expected in ((False, plain), (True, resumed)):
            p = proposer(fake_runner, 2.0, resume)
            p._straggler_factor = lambda batch, f=factor: f
            assert p.expected_loss(8) is expected, (factor, resume)
            share = 80 / 85 if resume else 1.0
            assert p._bound_gain(8) == pytest.approx(ROUND_RATE / DECODE.at(8) * 3.0 * factor * share)


@pytest.mark.parametrize("upper,plain,resumed", [(1.6, False, True), (2.0, False, False), (1.4, True, True)])
def test_a_bound_just_above_break_even_no_longer_pays_a_resumption(fake_runner, upper, plain, resumed) -> None:
    """At 8 requests the bound's gain is (1 + upper) 400 / 1000: 1.04 at 1.6 accepted drafts, ruled
    out only with the resumption (x ~0.94); 1.2 at 2.0 pays either way; 0.96 at 1.4 loses either way."""
    assert proposer(fake_runner, upper, False).expected_loss(8) is plain
    assert proposer(fake_runner, upper, True).expected_loss(8) is resumed


def test_up_to_bound_only_the_bound_is_unchanged(fake_runner) -> None:
    """At 8 requests with `bound_only` 8 the bound is read as without `resume_bound`."""
    assert proposer(fake_runner, 1.6, True, bound_only=8).expected_loss(8) is False
    assert proposer(fake_runner, 1.6, True, bound_only=7).expected_loss(8) is True


def test_the_resume_bound_key(folders, kit, benchmark_script) -> None:
    """Off by default, set on the proposer under the prompt-lookup wrapper, checked as a bool and
    confidence-only; `confidence-resume-bound` asks for it."""
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    assert kit.dspark_proposer(target, spec).resume_bound is False
    assert kit.dspark_proposer(target, {**spec, "resume_bound": True}).resume_bound is True
    kit.rejects_bool_key(target, drafter, "resume_bound")
    with pytest.raises(ValueError, match="^speculative_config.resume_bound: prices .*decode_profile"):
        dspark_factory.validate({"model": str(drafter), "scheduling": "confidence", "sps_profile": ROUNDS,
                                 "resume_bound": True})
    variants = benchmark_script("bench_variants")
    configs = variants.variant_configs(str(drafter), [4], spec["sps_profile"], spec["decode_profile"])
    assert configs["confidence-resume-bound"] == {**configs["confidence"], "resume_bound": True}
    assert "confidence-resume-bound" in set(variants.NAMED) & set(variants.BY_NAME_ONLY)
