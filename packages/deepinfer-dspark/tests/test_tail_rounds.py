# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`speculative_config.tail_rounds`: DSpark's rounds judged as a batch's tail counts them.

`batch_tail.tail_expected` weighs each request's expected accepted drafts; `LookupAssist` with
`tail_rounds` hands the weights to the DSpark proposer before each round (`round_weights`) only
while the engine drains and no request waits, so the gain the pause policy judges drops when the
requests ahead of the least advanced one carry the round; without the option, or outside a drain,
the judged value is the plain sum, as before."""

from __future__ import annotations

import pytest
import torch
from deepinfer_core.interfaces import DraftRequest

import deepinfer_dspark.proposers as proposers_module
from deepinfer_dspark.batch_tail import TAIL_AHEAD, TAIL_SLACK, tail_expected
from deepinfer_dspark.factories import _dspark_settings
from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
FLAT = SPSProfile([1, 64], [1000.0, 1000.0])


def test_tail_expected_is_the_weighted_mean_times_the_count() -> None:
    assert tail_expected([1.0, 3.0], [1.0, 1.0]) == 4.0                    # every weight 1: the sum
    assert tail_expected([1.0, 3.0], [1.0, TAIL_AHEAD]) == pytest.approx(2 * (1.0 + 3.0 * TAIL_AHEAD) / (1 + TAIL_AHEAD))
    assert tail_expected([], []) == 0.0
    with pytest.raises(ValueError, match="weights"):
        tail_expected([1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="weights"):
        tail_expected([1.0], [0.0])


def judged(fake_runner, monkeypatch, tail_rounds: bool, draining: bool) -> tuple[list, float]:
    """One round of two requests, "ahead" (TAIL_SLACK + 2 output tokens, 4 drafts allowed) and
    "behind" (1 output token, 1 draft allowed): the weights `tail_expected` got and the value the
    pause policy judged."""
    proposer = DSparkProposer(fake_runner(K, 0.9), K, SPSProfile([1, 2, 5, 10], [500.0] * 4), decode=FLAT)
    seen, weighed = [], []
    proposer._plan_pause = lambda expected, lengths, batch, **kw: seen.append(expected)
    real = proposers_module.tail_expected
    monkeypatch.setattr(proposers_module, "tail_expected",
                        lambda expected, weights: weighed.append((list(expected), list(weights)))
                        or real(expected, weights))
    lookup = LookupAssist(proposer, 2, tail_rounds=tail_rounds)
    lookup.draining(draining)
    views = {"ahead": [1, 2, 3, 4, 5], "behind": [1, 2, 3, 4, 5]}
    for rid, view in views.items():
        lookup.track(rid, view)
    views["ahead"].extend(range(10, 10 + TAIL_SLACK + 2))
    views["behind"].append(9)
    counts = [len(views["ahead"]) - 1, len(views["behind"]) - 1]
    proposer.observe_step(["ahead", "behind"], [0, 0], counts, [0, counts[0]], torch.ones(sum(counts), 2))
    asks = [DraftRequest("ahead", list(views["ahead"]), K, 0.0, 0, 1.0, 0.0, 0, TAIL_SLACK + 2),
            DraftRequest("behind", list(views["behind"]), 1, 0.0, 0, 1.0, 0.0, 0, 1)]
    drafts = lookup.propose(asks)
    assert [len(d.token_ids) for d in drafts] == [K, 1]   # DSpark drafted both
    assert len(seen) == 1 and len(weighed) == 1
    return weighed[0], seen[0]


def test_a_draining_batch_judges_the_round_by_its_tail(fake_runner, monkeypatch) -> None:
    (expected, weights), value = judged(fake_runner, monkeypatch, tail_rounds=True, draining=True)
    assert weights == [TAIL_AHEAD, 1.0]
    assert expected[0] > expected[1]                       # the request ahead carries the round
    assert value == pytest.approx(tail_expected(expected, weights)) and value < sum(expected) - 0.1


@pytest.mark.parametrize("tail_rounds, draining", [(False, True), (True, False)])
def test_otherwise_every_request_counts_once(fake_runner, monkeypatch, tail_rounds, draining) -> None:
    (expected, weights), value = judged(fake_runner, monkeypatch, tail_rounds, draining)
    assert weights == [1.0, 1.0] and value == sum(expected)


def test_the_option_is_checked_by_name(tmp_path) -> None:
    base = {"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": FLAT, "decode_profile": FLAT}
    assert _dspark_settings({**base, "tail_rounds": True})["tail_rounds"] is True
    assert _dspark_settings(base)["tail_rounds"] is False
    with pytest.raises(ValueError, match="speculative_config.tail_rounds"):
        _dspark_settings({**base, "tail_rounds": "yes"})
    with pytest.raises(ValueError, match="speculative_config.tail_rounds"):
        _dspark_settings({**base, "tail_rounds": True, "prompt_lookup_min": 0})
    with pytest.raises(ValueError, match="speculative_config.tail_rounds"):
        _dspark_settings({"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K,
                          "tail_rounds": True})   # fixed-length drafting judges no round


def test_the_engine_with_tail_rounds_stays_lossless_and_hands_the_weights(folders, kit, monkeypatch) -> None:
    """`LLM.generate` with `tail_rounds`: greedy output identical to decoding without speculation
    (fp32, deterministic), and the wrapper hands DSpark the running requests' tail weights while
    the batch drains (every request of this random drafter advances alike, so each weighs 1 here:
    the weighing itself is `test_a_draining_batch_judges_the_round_by_its_tail`'s)."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 4, 16], [900.0, 900.0, 900.0]), "decode_profile": FLAT,
            "tail_rounds": True, "opening_tokens": 0}
    batch = kit.prompts(4, seed=5)
    expected = kit.greedy(kit.build(target), batch)
    llm = kit.build(target, spec)
    lookup = llm.engine.speculative.proposer
    assert isinstance(lookup, LookupAssist) and lookup.tail_rounds
    weights = []
    real = proposers_module.tail_expected
    monkeypatch.setattr(proposers_module, "tail_expected",
                        lambda e, w: weights.append(list(w)) or real(e, w))
    assert kit.greedy(llm, batch) == expected
    assert weights and all(len(w) >= 1 for w in weights)
    handed = lookup.inner.round_weights   # the last round's: all four requests were still running
    assert len(handed) == len(batch) and set(handed.values()) <= {1.0, TAIL_AHEAD}
