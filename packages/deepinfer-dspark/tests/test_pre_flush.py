# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`DSparkProposer.pre_flush`: the buffered features are projected at a quiet stretch's last step
(while the device runs the next one) instead of in the round that resumes drafting."""

from __future__ import annotations

import pytest
import torch

from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
SPS = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 400.0, 100.0])
DECODE = SPSProfile([1, 64], [1000.0, 700.0])


def quiet_step(proposer: DSparkProposer, first: int) -> None:
    proposer.observe_step(["r0", "r1"], [first, first], [1, 1], [0, 1], torch.ones(2, 2))


def paused(fake_runner, pre_flush: bool) -> DSparkProposer:
    """Two requests with 10 positions held and one step buffered (position 10; the buffer's row
    size is then known), drafting paused at 2 for 5 rounds."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4)
    proposer.observe_step(["r0", "r1"], [0, 0], [10, 10], [0, 10], torch.ones(20, 2))
    proposer._last_batch = 2
    proposer.pauses.pause(2, 5)
    quiet_step(proposer, 10)
    proposer.pre_flush = pre_flush
    return proposer


@pytest.mark.parametrize("pre_flush", [True, False])
def test_the_stretch_last_step_flushes_with_pre_flush_only(fake_runner, pre_flush: bool) -> None:
    """A quiet stretch of 5 rounds buffers 4 steps; its 5th projects the 6 buffered (12 pairs)
    with `pre_flush`, else they wait for the round that resumes drafting. Either way the drafter holds
    every position when that round drafts, and only the pre-flushed one's round has no flush."""
    proposer = paused(fake_runner, pre_flush)
    assert proposer.quiet_rounds(2) == 5
    for i in range(4):
        quiet_step(proposer, 11 + i)
        assert proposer.pending.pairs == 2 * (i + 2) and proposer.runner.num_positions("r0") == 10
    quiet_step(proposer, 15)
    assert proposer.pending.holds != pre_flush and proposer.pre_flushes == int(pre_flush)
    assert proposer.runner.num_positions("r0") == (16 if pre_flush else 10)
    proposer.quiet_passed(2, 5)
    assert proposer.pauses.left(2) == 0 and proposer.idle_rounds() == 0
    from deepinfer_core.interfaces import DraftRequest
    drafts = proposer.propose([DraftRequest(f"r{i}", list(range(17)), K, 0.0, 0, 1.0, 0.0, 0, 40) for i in range(2)])
    assert all(d.token_ids for d in drafts)
    assert proposer.runner.num_positions("r0") == proposer.runner.num_positions("r1") == 16
    assert not proposer.pending.holds
    assert [bucket for (flushed, bucket) in proposer.flush_costs._spans if flushed] == ([] if pre_flush else [2])


def test_a_stretch_cut_short_or_a_round_between_flushes_nothing_early(fake_runner) -> None:
    """The countdown is the stretch last declared: a round asked one by one (`idle_round`; a
    `propose` resets it too) ends it, so the steps after it count for no stretch; a new
    declaration starts the count again."""
    proposer = paused(fake_runner, True)
    assert proposer.quiet_rounds(2) == 5
    quiet_step(proposer, 11)
    proposer.idle_round(2)   # a round asked one by one (the stretch ended early, e.g. a count change)
    for i in range(5):
        quiet_step(proposer, 12 + i)
    assert proposer.pre_flushes == 0 and proposer.pending.pairs == 14
    left = proposer.pauses.left(2)
    assert proposer.quiet_rounds(2) == left > 1
    for i in range(left - 1):
        quiet_step(proposer, 17 + i)
    assert proposer.pre_flushes == 0 and proposer.pending.holds
    quiet_step(proposer, 16 + left)
    assert proposer.pre_flushes == 1 and not proposer.pending.holds


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_engine_output_and_drafts_with_pre_flush(folders, kit, async_scheduling: bool) -> None:
    """An engine whose random drafter's rounds lose keeps the features in its pauses
    (`decline_features` off: quiet stretches), each 8 rounds (`max_probe_every` 8, the probe
    pause's floor lowered to it) so that they run out inside the replies; with `pre_flush` those
    stretches' last steps flush. The output is plain decoding's, and the drafts are the same: the rounds drafted and
    the tokens accepted equal the engine's without it."""
    from deepinfer_core import SamplingParams

    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "prompt_lookup_min": 0, "sps_profile": SPSProfile([1, 5, 8, 15], [900.0, 900.0, 900.0, 900.0]),
            "decode_profile": SPSProfile([1, 3], [1000.0, 1000.0]), "opening_tokens": 0, "max_probe_every": 8,
            "decline_features": False, "measure_round_times": False}
    prompts = [{"prompt_token_ids": p} for p in kit.prompts(2, seed=5)]
    params = [SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in (120, 70)]
    runs = []
    for pre_flush in (True, False):
        llm = kit.build(target, spec, async_scheduling=async_scheduling)
        proposer = llm.engine.speculative.proposer
        proposer.pre_flush = pre_flush
        proposer.costs.probe_pause = lambda *args, **kwargs: 8   # (settled losses price ~200 rounds here)
        outs = [o.outputs[0].token_ids for o in llm.generate(prompts, params)]
        runs.append((outs, proposer.drafted_rounds, proposer.acceptance.full._now, proposer.pre_flushes,
                     sum(len(v) for (flushed, _), v in proposer.flush_costs._spans.items() if flushed)))
    plain = [o.outputs[0].token_ids for o in kit.build(target).generate(prompts, params)]
    (on, off) = runs
    assert on[0] == off[0] == plain
    assert on[1:3] == off[1:3] and on[1] > 0
    assert on[3] > 0 and off[3] == 0 and on[4] < off[4], runs


def test_on_by_default_in_the_factory_and_checked_by_name(folders, kit, benchmark_script) -> None:
    """`speculative_config.pre_flush`: True by default (on DSpark, under the prompt-lookup
    wrapper), False turns it off, anything but a bool raises naming it; `bench_dspark.py`'s
    `confidence-late-flush` is the default without it."""
    from deepinfer_dspark.factories import PRE_FLUSH_DEFAULT

    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 8, 15], [900.0] * 4), "decode_profile": SPSProfile([1, 3], [1000.0] * 2)}
    assert PRE_FLUSH_DEFAULT is True
    assert kit.build(target, spec).engine.speculative.proposer.inner.pre_flush is True
    assert kit.build(target, {**spec, "pre_flush": False}).engine.speculative.proposer.inner.pre_flush is False
    with pytest.raises(ValueError, match="speculative_config.pre_flush"):
        kit.build(target, {**spec, "pre_flush": "yes"})
    with pytest.raises(ValueError, match="speculative_config.pre_flush"):
        kit.build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "pre_flush": True})
    variants = benchmark_script("bench_variants")
    configs = variants.variant_configs(str(drafter), [4], spec["sps_profile"], spec["decode_profile"])
    assert configs["confidence-late-flush"]["pre_flush"] is False and configs["confidence-preflush"]["pre_flush"]
    assert {"confidence-preflush", "confidence-late-flush"} <= set(variants.NAMED) & set(variants.BY_NAME_ONLY)


def test_a_stretch_cut_short_by_the_buffer_room_arms_no_countdown(fake_runner) -> None:
    """A stretch capped by the rows the buffer takes (`rounds_before_full`), not by the pause,
    flushes nothing early: else its last step would empty the buffer, the next ask would declare
    a one-step stretch (an empty buffer's room), and every paused step after would flush (the
    review of session 62). A stretch that ends the pause still flushes at its last step."""
    from deepinfer_dspark.pending_context import PendingContext

    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4, pre_flush=True)
    proposer.observe_step(["r0", "r1"], [0, 0], [10, 10], [0, 10], torch.ones(20, 2))
    proposer.feed.pending = PendingContext(max_rows=40)
    proposer._last_batch = 2
    proposer.pauses.pause(2, 60)
    assert proposer.quiet_rounds(2) == 1 and proposer._quiet_left == 0   # the room (empty: 1), not the pause
    quiet_step(proposer, 10)
    assert proposer.quiet_rounds(2) == 18 and proposer._quiet_left == 0   # 2 + 18 x 2 < 40 rows: the room again
    for i in range(3):
        quiet_step(proposer, 11 + i)
    assert proposer.pre_flushes == 0 and proposer.pending.pairs == 8
    proposer.pauses.pause(2, 5)   # a pause that ends within the room (15 rounds)
    assert proposer.quiet_rounds(2) == 5 and proposer._quiet_left == 5
    for i in range(5):
        quiet_step(proposer, 14 + i)
    assert proposer.pre_flushes == 1 and not proposer.pending.holds
