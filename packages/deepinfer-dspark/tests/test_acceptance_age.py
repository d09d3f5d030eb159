# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`speculative_config.acceptance_age_rounds`: the rounds over which the measured acceptance's
weight falls by e (`FullAcceptance.age_rounds`). The bound `expected_loss` reads widens as the
evidence fades, so the age sets how soon a load ruled out by it is drafted again."""

from __future__ import annotations

import math

import pytest

from deepinfer_dspark.factories import dspark_factory
from deepinfer_dspark.full_acceptance import AGE_ROUNDS, FullAcceptance
from deepinfer_dspark.sps import SPSProfile

SURVIVAL = [0.9, 0.8, 0.6, 0.4]   # k = 4: the probability that the first j + 1 drafts are all accepted


def measured(age: int | None, requests: int = 20, rounds: int = 0) -> FullAcceptance:
    """`requests` drafted requests, each verifying 3 drafts and accepting 2, then `rounds` rounds."""
    full = FullAcceptance(4) if age is None else FullAcceptance(4, age)
    for _ in range(requests):
        full.add(SURVIVAL, 3, 2)
    full.tick(rounds)
    return full


def test_the_evidence_fades_over_the_age() -> None:
    assert measured(None).age_rounds == AGE_ROUNDS
    for age in (16, AGE_ROUNDS, 8192):
        assert measured(age, rounds=1000).requests == pytest.approx(20 * math.exp(-1000 / age))
    fresh, default, slow = measured(None), measured(None, rounds=4096), measured(8192, rounds=4096)
    # The ratios' pseudo-draft weighs more as the evidence fades: the slow age keeps the estimate nearer
    # the fresh one, and its bound widens more slowly.
    assert abs(slow.mean() - fresh.mean()) < abs(default.mean() - fresh.mean())
    assert fresh.upper() < slow.upper() < default.upper()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2048", None])
def test_a_bad_age_names_the_key(bad) -> None:
    with pytest.raises(ValueError, match=r"^speculative_config.acceptance_age_rounds: must be an int >= 1"):
        FullAcceptance(4, bad)


def test_the_factory_key(tmp_path) -> None:
    base = {"model": str(tmp_path), "scheduling": "confidence", "sps_profile": SPSProfile([5, 50], [400.0, 100.0]),
            "decode_profile": SPSProfile([1, 10], [1000.0, 800.0])}
    assert dspark_factory.validate(base)["acceptance_age_rounds"] == AGE_ROUNDS
    assert dspark_factory.validate({**base, "acceptance_age_rounds": 8192})["acceptance_age_rounds"] == 8192
    for bad in (0, -5, 8192.0, True, "8192"):
        with pytest.raises(ValueError, match="^speculative_config.acceptance_age_rounds: must be an int >= 1"):
            dspark_factory.validate({**base, "acceptance_age_rounds": bad})
    with pytest.raises(ValueError, match="^speculative_config.acceptance_age_rounds: only used with scheduling"):
        dspark_factory.validate({"model": str(tmp_path), "scheduling": "fixed", "acceptance_age_rounds": 8192})


def test_the_engine_passes_the_age_to_the_acceptance(folders, kit) -> None:
    """`acceptance_age_rounds` reaches the proposer's `FullAcceptance` (through the prompt-lookup
    wrapper); absent, `AGE_ROUNDS`."""
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    assert kit.dspark_proposer(target, spec).acceptance.full.age_rounds == AGE_ROUNDS
    slow = kit.dspark_proposer(target, {**spec, "acceptance_age_rounds": 8192})
    assert slow.acceptance.full.age_rounds == 8192 and slow.acceptance.full.k == slow.num_tokens == 4
    three = kit.dspark_proposer(target, {**spec, "num_speculative_tokens": 3, "acceptance_age_rounds": 8192})
    assert three.acceptance.full.k == 3   # built for the engine's k
