# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`PausePolicy.bound_only` (`speculative_config.bound_only`, 1 by default): at up to that many
requests the ledgers' averages pause nothing; drafting stops there only where the measured
acceptance's upper bound cannot pay (`expected_loss`). Greedy output stays plain decoding's."""

from __future__ import annotations

import pytest
from deepinfer_core import SamplingParams
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.factories import BOUND_ONLY_DEFAULT, _dspark_settings
from deepinfer_dspark.pause_policy import SETTLED_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])
FALLING = SPSProfile([5, 10, 20, 30, 40], [500.0, 480.0, 300.0, 260.0, 240.0])


def requests(proposer: DSparkProposer, batch: int, step: int = 40) -> list[DraftRequest]:
    """`batch` requests whose contexts hold their committed positions, `step` tokens into their replies."""
    out = []
    for i in range(batch):
        proposer.runner.held[f"r{i}"] = 39
        out.append(DraftRequest(f"r{i}", list(range(40)), K, 0.0, 0, 1.0, 0.0, 0, step))
    return out


@pytest.mark.parametrize("step", [40, 0])   # a body round; an opening round (its own ledger)
def test_a_lone_request_drafts_through_losing_rounds(fake_runner, step) -> None:
    lone = DSparkProposer(fake_runner(K, 0.05), K, FALLING, decode=DECODE)
    lone.bound_only = 1
    for _ in range(2 * SETTLED_ROUNDS):
        assert lone.propose(requests(lone, 1, step))[0].token_ids
        assert lone.judged[-1] < 1 and lone.pauses.left(1) == 0 and not lone.openings.paused(1)
    ledger = lone.openings.ledger if step == 0 else lone.pauses
    assert ledger.rounds(1) == 2 * SETTLED_ROUNDS and ledger.gain(1) < 1   # averaged all the same
    assert lone.wants_features()
    default = DSparkProposer(fake_runner(K, 0.05), K, FALLING, decode=DECODE)
    default.propose(requests(default, 1, step))
    assert default.pauses.left(1) or default.openings.paused(1)   # the ledger pauses the default
    lone.propose(requests(lone, 2, step))   # 2 requests: the ledgers judge as by default
    assert lone.pauses.left(2) > 0 or lone.openings.paused(2)


def test_the_upper_bound_still_stops_a_lone_request(fake_runner, monkeypatch) -> None:
    lone = DSparkProposer(fake_runner(K, 0.05), K, FALLING, decode=DECODE)
    lone.bound_only = 1
    lone.propose(requests(lone, 1))
    assert lone.pauses.left(1) == 0
    monkeypatch.setattr(type(lone), "expected_loss", lambda self, batch: True)   # even full acceptance loses
    assert not lone.propose(requests(lone, 1))[0].token_ids
    assert lone.pauses.left(1) > 0 and not lone.wants_features()


@pytest.mark.parametrize("batch", [1, 2])
def test_bound_only_two_covers_two_requests(fake_runner, batch) -> None:
    proposer = DSparkProposer(fake_runner(K, 0.05), K, FALLING, decode=DECODE, bound_only=2)
    for _ in range(SETTLED_ROUNDS + 1):
        assert all(d.token_ids for d in proposer.propose(requests(proposer, batch)))
    assert proposer.pauses.left(batch) == 0 and proposer.pauses.gain(batch) < 1
    proposer.propose(requests(proposer, 3))
    assert proposer.pauses.left(3) > 0   # 3 requests: judged by the ledger


def test_the_config_key(tmp_path) -> None:
    base = {"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": FALLING, "decode_profile": DECODE}
    assert _dspark_settings(base)["bound_only"] == BOUND_ONLY_DEFAULT == 1
    assert _dspark_settings({**base, "bound_only": 0})["bound_only"] == 0
    assert _dspark_settings({**base, "bound_only": 4})["bound_only"] == 4
    for bad in (-1, 1.0, True, "1", [1]):
        with pytest.raises(ValueError, match="^speculative_config.bound_only: must be an int >= 0"):
            _dspark_settings({**base, "bound_only": bad})
    with pytest.raises(ValueError, match="^speculative_config.bound_only: only used with scheduling='confidence'"):
        _dspark_settings({"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K,
                          "scheduling": "fixed", "bound_only": 1})
    with pytest.raises(ValueError, match="^bound_only: must be >= 0"):
        DSparkProposer(_Runner(), K, FALLING, decode=DECODE, bound_only=-1)


class _Runner:
    drafter = type("D", (), {"config": type("C", (), {"block_size": K, "target_layer_ids": [1]})()})()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_engine_drafts_a_lone_request_through_losses_losslessly(folders, kit, asynchronous) -> None:
    """The factory's default (`bound_only` 1) under profiles where every round of the tiny random
    drafter loses: at 1 request it drafts (nearly) every round with greedy output equal to plain
    decoding's, where `bound_only` 0 pauses."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 64, 320], [1000.0, 900.0, 800.0, 500.0]),
            "decode_profile": SPSProfile([1, 64], [1000.0, 1000.0]), "opening_tokens": 0, "prompt_lookup_min": 0}
    params = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)
    plain = kit.build(target)
    skipped = {}
    for bound in (None, 0):
        llm = kit.build(target, spec if bound is None else {**spec, "bound_only": bound}, async_scheduling=asynchronous)
        proposer = llm.engine.speculative.proposer
        assert proposer.bound_only == (1 if bound is None else 0)
        for prompts in (kit.prompts(1, seed=3), kit.prompts(1, seed=4)):
            batch = [{"prompt_token_ids": p} for p in prompts]
            want = [o.outputs[0].token_ids for o in plain.generate(batch, params)]
            assert [o.outputs[0].token_ids for o in llm.generate(batch, params)] == want
        assert proposer.pauses.gain(1) < 1 and proposer.drafted_rounds > 0   # its rounds lose
        skipped[bound] = proposer.skipped_rounds, proposer.drafted_rounds
    (lone, lone_drafted), (paused, paused_drafted) = skipped[None], skipped[0]
    assert 10 * lone < paused and lone_drafted > paused_drafted, skipped   # (the upper bound may stop a few)
