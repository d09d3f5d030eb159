# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`DraftingLease` (`speculative_config.lease_rounds`): where a load's judged gain averages above
`LEASE_GAIN`, its requests' next rounds run lean (drafted and scheduled by Algorithm 1, not
judged), a sample round every `lease_rounds` renews the lease or ends it; greedy output stays
plain decoding's."""

from __future__ import annotations

import pytest
import torch
from deepinfer_core import SamplingParams
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.drafting_lease import LEASE_GAIN
from deepinfer_dspark.factories import LEASE_DEFAULT, _dspark_settings
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.scheduler import schedule_round
from deepinfer_dspark.sps import SPSProfile

K = 4
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])
CHEAP = SPSProfile([2, 5, 10, 20, 40], [990.0, 980.0, 970.0, 950.0, 900.0])   # a round ~ a plain step
LEASE = 4


def make(fake_runner, confidence=0.9, lease=LEASE, sps=CHEAP, **kw) -> DSparkProposer:
    settings = dict(decode=DECODE, opening_tokens=0, overlap_bookkeeping=True, judge_stragglers=True,
                    lease_rounds=lease, bound_only=2)
    settings.update(kw)
    return DSparkProposer(fake_runner(K, confidence), K, sps, **settings)


class Driver:
    """Drives a proposer as the engine does: `idle_rounds`, `propose`, one commit per drafted
    request (`accepted` drafts and the bonus token); records which rounds ran lean."""

    def __init__(self, proposer: DSparkProposer, ids=("r0",), length: int = 40) -> None:
        self.p, self.lengths, self.kinds = proposer, {i: length for i in ids}, []
        for i in ids:
            proposer.track(i, [0] * length)

    def asks(self) -> list[DraftRequest]:
        out = []
        for rid, n in self.lengths.items():
            self.p.runner.held[rid] = n - 1   # (its context holds the committed positions)
            out.append(DraftRequest(rid, list(range(n)), K, 0.0, 0, 1.0, 0.0, 0, n))
        return out

    def round(self, accepted: int | None = None) -> list:
        self.idle = self.p.idle_rounds()   # (the engine asks before it proposes)
        lean = self.p.leased_rounds
        drafts = self.p.propose(self.asks())
        self.kinds.append("L" if self.p.leased_rounds > lean else "F")
        for (rid, n), d in zip(list(self.lengths.items()), drafts):
            grown = 1 + (len(d.token_ids) if accepted is None else min(accepted, len(d.token_ids)))
            if d.token_ids:
                self.p.commit(rid, n + grown)
            self.lengths[rid] = n + grown
        return drafts

    def rounds(self, n: int, accepted: int | None = None) -> str:
        for _ in range(n):
            self.round(accepted)
        return "".join(self.kinds)


def test_a_winning_load_runs_lean_between_sample_rounds(fake_runner) -> None:
    p = make(fake_runner)
    driver = Driver(p)
    idle = []
    for _ in range(30):
        driver.round()
        idle.append(driver.idle)
    kinds = "".join(driver.kinds)
    assert idle == [0] * 30   # (nothing paused: every round drafted)
    assert p.drafted_rounds == 30 and p.leased_rounds > 15
    # granted by the first round (a lone probe, judged at once), then `LEASE` lean rounds, a sample
    # round, and again: the round after a sample round runs lean while the sample is judged
    assert kinds.startswith("F" + "L" * LEASE + "F" + "L" * LEASE + "F"), kinds
    assert max(len(run) for run in kinds.split("F")) == LEASE and kinds.endswith("L")
    assert p.pauses.rounds(1) == kinds.count("F")   # judged: the full rounds only
    assert p.acceptance.rounds == 29   # the evidence: every round but the last (folded during the next draft)
    assert p.judged[4] > LEASE_GAIN and p.pauses.gain(1) > LEASE_GAIN


def test_without_the_option_every_round_runs_the_full_path(fake_runner) -> None:
    p = make(fake_runner, lease=0)
    assert Driver(p).rounds(12) == "F" * 12 and p._lease is None


@pytest.mark.parametrize("setting", [{"bound_only": 1}, {"measure_plain_steps": True}])
def test_no_lease_where_a_judgement_acts(fake_runner, setting) -> None:
    """Above `bound_only` requests a judgement may pause (and spread a loss), and plain
    re-timing runs follow judgements: every round there runs the full path."""
    p = make(fake_runner, **setting)
    assert Driver(p, ids=("r0", "r1")).rounds(12) == "F" * 12 and p._lease is None


def test_lean_rounds_keep_algorithm_1(fake_runner) -> None:
    """Falling confidences: each lean round verifies the prefix `schedule_round` picks, as the
    full path does."""
    confidences = [0.97, 0.9, 0.3, 0.02]
    p = make(fake_runner, confidence=confidences)
    full = make(fake_runner, confidence=confidences, lease=0)
    driver, twin = Driver(p), Driver(full)
    for _ in range(12):
        drafts, want = driver.round(), twin.round()
        assert [len(d.token_ids) for d in drafts] == [len(d.token_ids) for d in want]
    assert p.leased_rounds > 0
    lengths = schedule_round([confidences], [K], p.verify_rates.for_batch(1))[0]
    assert p.lengths == lengths and 0 < lengths[0] < K


@pytest.mark.parametrize("untimed", [True, False])
def test_lean_rounds_time_only_where_the_timing_is_read(fake_runner, monkeypatch, untimed) -> None:
    """With `bound_only_untimed` the rounds up to `bound_only` requests are priced on the profiles
    alone: a round there, lean or full, does no timing work (session 55: ~5 us a round on this
    CPU) and decides as one that timed itself (the old rounds: every bucket forced timed below).
    Where the bucket is timed, rounds time themselves as before."""
    import deepinfer_dspark.step_timing as step_timing

    settings = dict(measure_round_times=True, bound_only=1, bound_only_untimed=untimed)
    p, old = make(fake_runner, **settings), make(fake_runner, **settings)
    starts = {id(p): 0, id(old): 0}
    for proposer in (p, old):
        real = proposer.rates.start

        def counted(real=real, key=id(proposer)):
            starts[key] += 1
            return real()
        proposer.rates.start = counted
    driver, twin = Driver(p), Driver(old)
    for _ in range(24):
        drafts = driver.round()
        with monkeypatch.context() as m:
            m.setattr(step_timing, "batch_bucket", lambda batch: 1 << 30)   # (every round timed)
            want = twin.round()
        assert [d.token_ids for d in drafts] == [d.token_ids for d in want]
    assert driver.kinds == twin.kinds and p.leased_rounds >= 12
    assert p.pauses.rounds(1) == old.pauses.rounds(1) and p.acceptance.ratio(1) == old.acceptance.ratio(1)
    assert starts[id(old)] == 24 and "F" in driver.kinds
    assert starts[id(p)] == (0 if untimed else 24)
    assert p._correction(1) == old._correction(1)


@pytest.mark.parametrize("lean", [False, True])
def test_untimed_rounds_still_count_down_a_plain_run_started_elsewhere(fake_runner, lean) -> None:
    """A plain re-timing run (`measure_plain_steps`) started at another bucket counts down over
    every bucket's rounds (`MeasuredRates.plain_left`): the untimed rounds at 1 request, full or
    lean, still count themselves (session 55's review: skipping the count kept the run open for as
    long as only drafted rounds at 1 request ran, and `retiming` with it). (No lease is granted
    with `measure_plain_steps`: the lean case sets the run's countdown by hand.)"""
    p = make(fake_runner, lease=LEASE if lean else 0, measure_round_times=True, measure_plain_steps=not lean,
             bound_only=1, bound_only_untimed=True)
    driver = Driver(p)
    driver.rounds(2)
    p.rates.plain_left = 3   # (as a run started at 4 requests just before the batch fell to 1)
    kinds = driver.rounds(3)
    assert kinds == ("FLLLL" if lean else "FFFFF"), kinds
    assert p.drafted_rounds == 5 and p.rates.plain_left == 0 and not p.retiming
    assert p.rates.samples.get(("spec", 1), 0) == 0   # (and still untimed)


def test_a_lean_round_keeps_the_evidence_but_is_not_judged(fake_runner) -> None:
    p = make(fake_runner)
    driver = Driver(p)
    driver.rounds(2)   # the first round (judged at once, granting a lease), folded during the second's draft
    assert driver.kinds == ["F", "L"] and p.acceptance.rounds == 1 and p.pauses.rounds(1) == 1
    live, full = p.stragglers._live["r0"][0], p.acceptance.full.requests
    driver.rounds(3)
    assert driver.kinds[2:] == ["L"] * 3
    assert p.pauses.rounds(1) == 1   # not judged
    assert p.acceptance.rounds == 4 and p.acceptance.body_requests == 4   # (the last lean round: still open)
    assert p.acceptance.full.requests > full + 2.9
    assert p.acceptance.ratio(1) == pytest.approx((4 * K + 1) / (4 * sum(p._lean_begin[1][0][3][:K]) + 1), rel=1e-3)
    assert p.stragglers._live["r0"][0] == live + 3
    assert p._lease.rounds == 4 and p._lease.emitted == 4 * (K + 1)


def test_without_overlap_a_lean_round_folds_at_once(fake_runner) -> None:
    p = make(fake_runner, overlap_bookkeeping=False)
    driver = Driver(p)
    driver.rounds(3)
    assert driver.kinds == ["F", "L", "L"] and p._late is None and p._lean_begin is None
    assert p.acceptance.rounds == 2 and p.acceptance.body_requests == 3   # (the last round: open, committed)


def test_a_lease_whose_rounds_lose_ends_and_cools_down(fake_runner) -> None:
    """A round of ~3 plain steps, judged at a gain of ~1.35 (break-even ~3 tokens a round); drafts
    the target then never accepts: at the sample point the lean rounds emitted fewer tokens a
    round than break-even, the lease ends and is not granted again for `LEASE` judged rounds."""
    p = make(fake_runner, sps=SPSProfile([2, 5, 10, 20, 40], [340.0, 330.0, 320.0, 300.0, 280.0]))
    driver = Driver(p)
    driver.rounds(2)
    assert p._lease is not None and LEASE_GAIN < p.pauses.gain(1) < 2 and 2.5 < p._lease.break_even < 3.5
    driver.rounds(LEASE - 1, accepted=0)
    assert p._lease.realized_gain() <= 1.0
    driver.round(accepted=0)   # the sample point: ended, a full round
    assert driver.kinds[-1] == "F" and p._lease is None and p._lease_cooldown == LEASE
    judged = p.pauses.rounds(1)
    for _ in range(300):   # every draft accepted again: the measured acceptance, then the gain, recover
        driver.round()
        if p._lease is not None:
            break
    assert p._lease is not None and p.pauses.rounds(1) - judged > LEASE   # not before `LEASE` judged rounds


def test_a_cooling_lease_is_not_granted(fake_runner) -> None:
    p = make(fake_runner)
    Driver(p).rounds(1)
    plan = (3.0, [K], 1, False, False, frozenset({"r0"}))
    p._lease, p._lease_cooldown = None, 2
    for _ in range(2):
        p._grant_lease(plan)   # (judged as the last round was: a win by far)
        assert p._lease is None
    p._grant_lease(plan)
    assert p._lease is not None and p._lease.left == LEASE and p._lease_cooldown == 0


@pytest.mark.parametrize("stretch", ["idle_round", "dormant_passed", "quiet_passed"])
def test_a_round_without_drafts_ends_a_lease(fake_runner, stretch) -> None:
    p = make(fake_runner)
    driver = Driver(p)
    driver.rounds(3)
    assert p._lease is not None
    getattr(p, stretch)(*((1,) if stretch == "idle_round" else (1, 2)))
    assert p._lease is None
    driver.round()
    assert driver.kinds[-1] == "F"


def test_a_renewal_waiting_when_the_run_ends_grants_nothing(fake_runner) -> None:
    """The run ends (a round without drafts) while the sample round's judgement waits: the
    judgement runs then, but no lease outlives the run."""
    p = make(fake_runner)
    driver = Driver(p)
    driver.rounds(LEASE + 2)   # ... a sample round last, its judgement waiting (`LateBookkeeping`)
    assert driver.kinds[-1] == "F" and p._late is not None and p._late[0] is not None
    p.idle_round(1)
    assert p._late is None and p._lease is None


def test_a_request_that_left_holds_no_lease(fake_runner) -> None:
    p = make(fake_runner)
    driver = Driver(p)
    driver.rounds(LEASE + 2)
    p.remove("r0")
    p.idle_round(1)
    assert p._lease is None


def test_bounds_priced_by_a_full_round_are_read_under_a_lease(fake_runner) -> None:
    """A full round's draft priced the bounds for the next step (`_verdict`): `idle_rounds`
    reads them, and a rule-out pauses, as without a lease (the next round then ends it)."""
    p = make(fake_runner)
    driver = Driver(p)
    driver.rounds(3)
    assert p._lease.left > 0 and p.idle_rounds() == 0
    p._verdict = (1, False, True)   # (as `_overlapped` prices it where `expected_loss` rules 1 request out)
    assert p.idle_rounds() > 0
    driver.round()
    assert driver.kinds[-1] == "F" and p._lease is None


@pytest.mark.parametrize("change", ["join", "remove", "pause", "gap", "pending", "running"])
def test_a_lease_ends_when_its_load_changes(fake_runner, change) -> None:
    p = make(fake_runner)
    driver = Driver(p, ids=("r0", "r1"))
    driver.rounds(3)
    assert driver.kinds[-1] == "L" and p._lease is not None
    if change == "join":
        driver.lengths["r2"] = 40
        p.track("r2", [0] * 40)
    elif change == "remove":
        p.remove("r1")
        del driver.lengths["r1"]
    elif change == "pause":
        p.pauses.pause(2, 5)   # (a loss spread from another load)
    elif change == "gap":
        original = driver.asks

        def gapped():
            out = original()
            p.runner.held["r1"] -= 1   # its context misses a position
            return out
        driver.asks = gapped
    elif change == "pending":   # (features buffered: they are flushed before a draft)
        p.pending.add([("r0", [driver.lengths["r0"] - 2], torch.zeros(1, 4))])
    else:
        p.running(3)   # the engine asks about fewer requests than run
    drafts = driver.round()
    assert driver.kinds[-1] == "F" and p._lease is None
    assert change in ("pause", "gap") or drafts[0].token_ids
    if change == "pause":
        assert driver.idle > 0 and not any(d.token_ids for d in drafts)   # paused: no lean answer


def test_idle_rounds_answers_at_once_under_a_lease(fake_runner, monkeypatch) -> None:
    p = make(fake_runner)
    Driver(p).rounds(3)
    assert p._lease.left > 0
    monkeypatch.setattr(p, "expected_loss", lambda batch: pytest.fail("priced under a lease"))
    monkeypatch.setattr(p, "cannot_pay", lambda batch: pytest.fail("priced under a lease"))
    assert p.idle_rounds() == 0


def test_the_config_key(tmp_path, fake_runner) -> None:
    base = {"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": CHEAP, "decode_profile": DECODE}
    assert _dspark_settings(base)["lease_rounds"] == LEASE_DEFAULT
    assert _dspark_settings({**base, "lease_rounds": 8})["lease_rounds"] == 8
    for bad in (-1, 1.5, "8", True):
        with pytest.raises(ValueError, match="^speculative_config.lease_rounds"):
            _dspark_settings({**base, "lease_rounds": bad})
    with pytest.raises(ValueError, match="^speculative_config.lease_rounds: only used with scheduling="):
        _dspark_settings({"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K,
                          "scheduling": "fixed", "lease_rounds": 8})
    with pytest.raises(ValueError, match="^lease_rounds: must be >= 0"):
        make(fake_runner, lease=-1)


@pytest.mark.parametrize("asynchronous,lookup", [(False, 0), (True, 0), (False, 2)])
def test_the_engine_stays_lossless_under_leases(folders, kit, asynchronous, lookup) -> None:
    """Profiles where a round costs a tenth of a plain step: every judged round wins by far, so
    most rounds at 1 request run lean (the factory's `bound_only` 1); greedy output equals plain
    decoding's at 1 and 3 requests."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 64, 320], [10000.0, 10000.0, 9000.0, 8000.0]),
            "decode_profile": SPSProfile([1, 64], [1000.0, 1000.0]), "opening_tokens": 0, "prompt_lookup_min": lookup,
            "lease_rounds": LEASE, "measure_round_times": False}
    params = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)
    plain = kit.build(target)
    llm = kit.build(target, spec, async_scheduling=asynchronous)
    proposer = getattr(llm.engine.speculative.proposer, "inner", llm.engine.speculative.proposer)   # (`LookupAssist`)
    leased = []
    for prompts in (kit.prompts(1, seed=3), kit.prompts(3, seed=4)):
        batch = [{"prompt_token_ids": p} for p in prompts]
        want = [o.outputs[0].token_ids for o in plain.generate(batch, params)]
        drafted = proposer.drafted_rounds
        assert [o.outputs[0].token_ids for o in llm.generate(batch, params)] == want
        leased.append((proposer.leased_rounds - sum(n for n, _ in leased), proposer.drafted_rounds - drafted))
    assert leased[0][0] > leased[0][1] // 2   # 1 request: most rounds lean
    assert leased[1][0] <= 1 < leased[1][1]   # 3 requests, above `bound_only`: judged (but a batch's last one)


def test_seeded_sampling_is_the_same_with_and_without_leases(folders, kit) -> None:
    """Temperature 0.8 with per-request seeds: leases change no round's verified drafts here
    (every round drafts, Algorithm 1 picks the prefixes either way), so the replies are equal."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 64, 320], [10000.0, 10000.0, 9000.0, 8000.0]),
            "decode_profile": SPSProfile([1, 64], [1000.0, 1000.0]), "opening_tokens": 0,
            "measure_round_times": False}
    prompts = [{"prompt_token_ids": p} for p in kit.prompts(2, seed=6)]
    replies = {}
    for lease in (LEASE, 0):
        llm = kit.build(target, {**spec, "lease_rounds": lease})
        replies[lease] = [llm.generate([p], SamplingParams(temperature=0.8, seed=11 + i, max_tokens=40,
                                                           ignore_eos=True))[0].outputs[0].token_ids
                          for i, p in enumerate(prompts)]
        inner = getattr(llm.engine.speculative.proposer, "inner", llm.engine.speculative.proposer)
        assert (inner.leased_rounds > 0) == (lease > 0)
    assert replies[LEASE] == replies[0]
