# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""A bucket's body loss must hold over its requests (`loss_z`, `PauseLedger.bound`): rounds of
one request are alike, requests are not, so the average of a few requests' rounds pauses the
next requests only with a margin of `loss_z` standard deviations over the square root of the
requests drafted there (H200, session 42, call 8: the first three prompts at 1 request lost and
paused the next ones, which fixed-7 ran at 1.36 and 1.77x plain decoding).
"""

from __future__ import annotations

import math
import types

import pytest
import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.draft_runner import DraftOutput
from deepinfer_dspark.factories import dspark_factory
from deepinfer_dspark.pause_ledger import REQUEST_SAMPLES, PauseLedger
from deepinfer_dspark.pause_policy import LOSS_Z
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
# As test_pause_ledger.py: alone, a round at confidence 0.95 gains ~2.26, at 0.3 ~0.71.
SPS = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 400.0, 150.0])
DECODE = SPSProfile([1, 64], [1000.0, 700.0])


class Levels:
    """Drafts K tokens per request; each call's confidences are the next of `levels` (cycled)."""

    def __init__(self, levels: list[float]) -> None:
        self.drafter = types.SimpleNamespace(config=types.SimpleNamespace(block_size=K, target_layer_ids=[1]),
                                             dtype=torch.float32)
        self.levels, self.calls = levels, 0

    def num_positions(self, request_id: str) -> int:
        return 9

    def draft(self, requests, k):
        level = self.levels[self.calls % len(self.levels)]
        self.calls += 1
        return [DraftOutput(torch.full((k,), 7), None, torch.full((k,), level), None) for _ in requests]

    def remove(self, request_id: str) -> None:
        pass


def test_bound_is_the_weighted_mean_plus_z_deviations_over_the_requests() -> None:
    """Gains 1.2, 0.6, 0.9 (weights 1, 1/2, 1/3 while young): mean 0.9, variance
    (1 - 1/2)(1/2 * 0.36) = 0.09, then (1 - 1/3)(0.09 + 1/3 * 0) = 0.06 (West 1979)."""
    ledger = PauseLedger(8, 64, z=2.0)
    assert ledger.bound(1) is None
    assert not ledger.judge(1, 1.2, ["a"]) and ledger.bound(1) == pytest.approx(1.2)
    ledger.judge(1, 0.6, ["a"])
    assert ledger.gain(1) == pytest.approx(0.9) and ledger.bound(1) == pytest.approx(0.9 + 2 * 0.3)
    assert not ledger.judge(1, 0.9, ["b"])                        # 0.9 + 2 sqrt(0.06 / 2) = 1.246
    assert ledger.bound(1) == pytest.approx(0.9 + 2 * math.sqrt(0.06 / 2))
    plain = PauseLedger(8, 64)                                    # z 0: the average alone
    for gain in (1.2, 0.6):
        plain.judge(1, gain, ["a"])
    assert plain.judge(1, 0.9, ["b"]) and plain.bound(1) == plain.gain(1) == pytest.approx(0.9)


def test_the_margin_shrinks_with_the_requests_drafted() -> None:
    """The same rounds (mean 0.9, standard deviation 0.5) lose once they came from enough
    requests: bound 0.9 + 1 / sqrt(n), not with 2 or 8 requests, with 128 yes. The count stops
    at `REQUEST_SAMPLES`."""
    def verdicts(pairs: int) -> list[bool]:
        ledger = PauseLedger(8, 64, z=LOSS_Z)
        return [ledger.judge(2, gain, [f"r{i % pairs}", f"s{i % pairs}"])
                for i, gain in enumerate([1.4, 0.4] * 32)]
    assert not any(verdicts(1)) and not any(verdicts(4))
    assert verdicts(64)[-1]
    ledger = PauseLedger(8, 64, z=LOSS_Z)
    for i in range(REQUEST_SAMPLES + 40):
        ledger.judge(8, 1.0, [f"q{i}"])
    assert len(ledger._requests[8]) == REQUEST_SAMPLES


def _round(proposer: DSparkProposer, request_id: str) -> bool:
    """One engine round of one request (as the engine calls the proposer); True if drafted."""
    if proposer.idle_rounds() > 0:
        proposer.idle_round(1)
        return False
    ask = DraftRequest(request_id, list(range(10)), proposer.num_tokens, 0.0, 0, 1.0, 0.0, 0, 40)
    return any(d.token_ids for d in proposer.propose([ask]))


def test_one_request_losing_does_not_pause_the_bucket_for_the_next() -> None:
    """Alone, a round at 0.95 (gain 2.26) then eight at 0.3 (0.71): mean ~0.88, standard
    deviation ~0.5. The average alone pauses the request's rounds; with the margin one request's
    rounds never lose (bound ~1.9), and the bucket pauses only once ~70 requests agree."""
    levels = [0.95] + [0.3] * 8
    plain = DSparkProposer(Levels(levels), K, SPS, decode=DECODE, loss_z=0.0)
    bound = DSparkProposer(Levels(levels), K, SPS, decode=DECODE)
    assert bound.pauses.z == LOSS_Z and plain.pauses.z == 0.0
    one = [_round(plain, "a") for _ in range(100)], [_round(bound, "a") for _ in range(100)]
    assert plain.pauses.gain(1) < 1 and bound.pauses.gain(1) < 1
    assert sum(one[1]) > 2 * sum(one[0]), (sum(one[0]), sum(one[1]))
    # Many requests with the same rounds: the margin vanishes and the bucket pauses as without it.
    many = DSparkProposer(Levels(levels), K, SPS, decode=DECODE)
    drafted = [_round(many, f"r{i}") for i in range(400)]
    assert sum(drafted[200:]) < 0.5 * sum(one[1]), (sum(drafted[200:]), sum(one[1]))


def test_the_factory_reads_loss_z(tmp_path) -> None:
    base = {"model": str(tmp_path), "scheduling": "confidence", "sps_profile": SPS, "decode_profile": DECODE}
    assert dspark_factory.validate(base)["loss_z"] == LOSS_Z == 2.0
    assert dspark_factory.validate({**base, "loss_z": 0})["loss_z"] == 0.0
    assert dspark_factory.validate({**base, "loss_z": 3.5})["loss_z"] == 3.5
    for bad in (-1, 11, True, "2", float("nan")):
        with pytest.raises(ValueError, match="speculative_config.loss_z"):
            dspark_factory.validate({**base, "loss_z": bad})
    with pytest.raises(ValueError, match="speculative_config.loss_z"):
        dspark_factory.validate({"model": str(tmp_path), "scheduling": "fixed", "loss_z": 1.0})
