# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`Proposer.dormant_rounds`: a paused proposer declares a stretch of steps it needs nothing
from; the engine then asks it nothing for them (no `wants_features`, `observe*`, `idle_rounds`,
`idle_round`, `propose`), captures no features, and reports the steps run with
`dormant_passed` when the stretch ends (its steps run out, or the number of running requests
changes). Greedy output never changes; a faulty plug-in only loses the stretches.
"""

from __future__ import annotations

import logging

import pytest

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.engine.dormant_steps import DormantSteps
from deepinfer_core.interfaces import Draft, DraftRequest

PROMPTS = [[5, 6, 7, 8, 5, 6, 7], [9, 10, 11, 9, 10], [3, 4, 3, 4, 3, 4], [8, 8, 9, 8, 8]]
MAX_TOKENS = [20, 14, 9, 20]   # requests finish at different steps: the running count changes


class Sleeper:
    """Drafts the last token twice for `awake` rounds, then sleeps `asleep` rounds: paused
    (`idle_rounds`), features declined, and declared dormant for the rest of the pause.
    Every call is logged; a call outside the protocol fails the test."""

    def __init__(self, awake: int = 3, asleep: int = 5, fail: str = "", answer: object = None) -> None:
        self.target_layer_ids = (0,)
        self.awake, self.asleep, self.fail, self.answer = awake, asleep, fail, answer
        self.round = 0            # rounds seen: drafted, idle or dormant
        self.calls: list[tuple] = []
        self.granted = 0          # dormant steps granted and not yet reported
        self.observed = 0

    def _left(self) -> int:
        """Idle rounds left in the current sleep (0 while awake)."""
        phase = self.round % (self.awake + self.asleep)
        return 0 if phase < self.awake else self.awake + self.asleep - phase

    def _check(self, name: str) -> None:
        assert not self.granted, f"{name} called during a dormant stretch"
        self.calls.append((name,))

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        self._check("propose")
        self.round += 1
        return [Draft([int(r.token_ids[-1])] * min(2, r.max_tokens)) for r in requests]

    def idle_rounds(self) -> int:
        self._check("idle_rounds")
        return self._left()

    def idle_round(self, num_requests: int) -> None:
        self._check("idle_round")
        self.round += 1

    def wants_features(self) -> bool:
        self._check("wants_features")
        return self._left() == 0

    def observe_step(self, request_ids, first_positions, counts, row_starts, features) -> None:
        self._check("observe_step")
        self.observed += 1

    def dormant_rounds(self, num_requests: int) -> object:
        self._check("dormant_rounds")
        if self.fail == "ask":
            raise RuntimeError("ask broke")
        if self.answer is not None:
            return self.answer
        self.granted = self._left()
        return self.granted

    def dormant_passed(self, num_requests: int, rounds: int) -> None:
        assert 1 <= rounds <= self.granted, (rounds, self.granted)
        self.granted = 0
        self.calls.append(("dormant_passed", num_requests, rounds))
        self.round += rounds
        if self.fail == "report":
            raise RuntimeError("report broke")

    def commit(self, request_id: str, num_tokens: int) -> None:
        pass

    def remove(self, request_id: str) -> None:
        pass


def build(folder, proposer=None, **kw) -> LLM:
    spec = None if proposer is None else {"proposer": proposer, "num_speculative_tokens": 2}
    return LLM(str(folder), max_model_len=64, block_size=4, kv_cache_memory=16 << 20, deterministic=True,
               speculative_config=spec, **kw)


def run(llm: LLM) -> list[list[int]]:
    outs = llm.generate([{"prompt_token_ids": p} for p in PROMPTS],
                        [SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in MAX_TOKENS])
    assert all(o.error is None for o in outs)
    return [o.outputs[0].token_ids for o in outs]


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_dormant_stretches_ask_nothing_and_keep_greedy_output(tiny_checkpoint, async_scheduling: bool) -> None:
    folder = tiny_checkpoint("qwen3")
    expected = run(build(folder))
    sleeper = Sleeper()
    llm = build(folder, sleeper, async_scheduling=async_scheduling)
    assert run(llm) == expected
    reports = [c for c in sleeper.calls if c[0] == "dormant_passed"]
    dormant = sum(c[2] for c in reports)
    assert reports and dormant == llm.engine.speculative.dormant.steps > 0
    assert len({c[1] for c in reports}) >= 2              # stretches at several batch sizes
    assert not llm.engine.speculative.dormant.passed      # reported when the last request ended
    assert llm.engine.speculative.stats.verified > 0      # awake rounds still drafted
    assert sleeper.observed > 0                            # ... with their features


@pytest.mark.parametrize("fail,answer", [("ask", None), ("", True), ("", "3"), ("", -2), ("", 2.0)])
def test_a_faulty_or_odd_dormant_rounds_only_loses_the_stretch(tiny_checkpoint, fail: str, answer: object) -> None:
    folder = tiny_checkpoint("qwen3")
    expected = run(build(folder))
    sleeper = Sleeper(fail=fail, answer=answer)
    llm = build(folder, sleeper)
    assert run(llm) == expected
    assert llm.engine.speculative.dormant.steps == 0
    assert not [c for c in sleeper.calls if c[0] == "dormant_passed"]
    assert any(c[0] == "idle_round" for c in sleeper.calls)   # paused rounds asked one by one


def test_a_raising_dormant_passed_ends_dormancy(tiny_checkpoint, caplog) -> None:
    folder = tiny_checkpoint("qwen3")
    expected = run(build(folder))
    sleeper = Sleeper(fail="report")
    llm = build(folder, sleeper)
    with caplog.at_level(logging.WARNING, logger="deepinfer_core.engine.dormant_steps"):
        assert run(llm) == expected
    assert len([c for c in sleeper.calls if c[0] == "dormant_passed"]) == 1
    assert "dormant_passed failed" in caplog.text and "speculative_config.proposer" in caplog.text
    asks = [i for i, c in enumerate(sleeper.calls) if c[0] == "dormant_rounds"]
    report = next(i for i, c in enumerate(sleeper.calls) if c[0] == "dormant_passed")
    assert all(i < report for i in asks)                   # never asked again


class Log:
    """A bare proposer side for `DormantSteps` alone: grants `grant` rounds each time."""

    def __init__(self, grant: int) -> None:
        self.grant, self.asked, self.reports = grant, [], []

    def dormant_rounds(self, n: int) -> int:
        self.asked.append(n)
        return self.grant

    def dormant_passed(self, n: int, rounds: int) -> None:
        self.reports.append((n, rounds))


def test_a_stretch_ends_after_a_step_that_finished_requests() -> None:
    """`ran` (after each dormant step's update): the step that finished requests is reported at
    the count running after it, the stretch's earlier steps at its own count; then the engine
    asks again."""
    log = Log(10)
    steps = DormantSteps(log)
    for _ in range(3):
        assert steps.step(8)
        steps.ran(8)
    assert steps.step(8)
    steps.ran(6)                                               # this step finished two requests
    assert log.reports == [(8, 3), (6, 1)] and steps.passed == 0
    assert steps.step(6) and log.asked == [8, 6]
    steps.ran(0)                                               # the last ones finished
    assert log.reports == [(8, 3), (6, 1), (0, 1)] and steps.steps == 5


def test_integer_answers_count_and_a_failing_ask_is_logged_once(caplog) -> None:
    import numpy as np

    log = Log(np.int64(2))
    steps = DormantSteps(log)
    assert steps.step(4) and steps.step(4) and steps.left == 0   # a numpy int is a number of rounds

    class Broken(Log):
        def dormant_rounds(self, n: int) -> int:
            raise RuntimeError("ask broke")
    broken = DormantSteps(Broken(0))
    with caplog.at_level(logging.WARNING, logger="deepinfer_core.engine.dormant_steps"):
        assert not broken.step(4) and not broken.step(4)
    assert caplog.text.count("dormant_rounds failed") == 1


def test_abort_and_drafts_report_the_open_stretch(tiny_checkpoint) -> None:
    """The engine reports an open stretch when its last request is aborted (not with the next
    batch), and before a step that carries drafts (drafts scheduled from before the stretch)."""
    folder = tiny_checkpoint("qwen3")
    sleeper = Sleeper(awake=0, asleep=1000)                     # paused for good, always dormant
    llm = build(folder, sleeper)
    engine = llm.engine
    engine.add_request("a", PROMPTS[0], SamplingParams(temperature=0, max_tokens=30, ignore_eos=True))
    for _ in range(6):
        engine.step()
    assert engine.speculative.dormant.passed > 0
    engine.abort("a")
    assert engine.speculative.dormant.passed == 0 and sleeper.calls[-1][0] == "dormant_passed"
    while engine.has_unfinished():
        engine.step()
    dormant = engine.speculative.dormant
    dormant.num_requests, dormant.passed, dormant.left, sleeper.granted = 2, 3, 5, 8
    assert engine._dormant({"b": [1, 2]}) is False              # a step with drafts
    assert sleeper.calls[-1] == ("dormant_passed", 2, 3) and dormant.passed == 0


def test_a_stretch_ends_when_its_rounds_run_out_or_the_batch_changes() -> None:
    log = Log(3)
    steps = DormantSteps(log)
    assert [steps.step(8) for _ in range(4)] == [True] * 4     # 3 granted, then asked again: 3 more
    assert log.asked == [8, 8] and log.reports == [(8, 3)]
    assert steps.step(7)                                        # the batch changed: reported, asked
    assert log.reports == [(8, 3), (8, 1)] and log.asked == [8, 8, 7]
    steps.settle()
    steps.settle()                                              # nothing left to report
    assert log.reports == [(8, 3), (8, 1), (7, 1)] and steps.steps == 5
    none = DormantSteps(Log(0))
    assert not none.step(8) and none.steps == 0
    assert not DormantSteps(object()).step(8)                   # a proposer without the methods
    half = Log(3)
    half.dormant_passed = None                                  # asking needs a way to report
    assert not DormantSteps(half).step(8) and half.asked == []


class Floored(Log):
    """`Log` with `dormant_floor`: each stretch holds down to `floor` running requests."""

    def __init__(self, grant: int, floor: object) -> None:
        super().__init__(grant)
        self.floor, self.floors = floor, []

    def dormant_floor(self, n: int) -> object:
        self.floors.append(n)
        if isinstance(self.floor, Exception):
            raise self.floor
        return self.floor


def test_a_floor_keeps_the_stretch_over_finishing_requests() -> None:
    """Within [floor, declared count] requests that finish do not end the stretch; it is
    reported once, at the count after its last step; below the floor it ends as without one."""
    log = Floored(10, 5)
    steps = DormantSteps(log)
    for before, after in ((8, 8), (8, 7), (7, 5), (5, 5)):
        assert steps.step(before)
        steps.ran(after)
    assert log.reports == [] and log.asked == [8] and log.floors == [8] and steps.num_requests == 5
    assert steps.step(5)
    steps.ran(3)                                               # below the floor: ended here
    assert log.reports == [(5, 4), (3, 1)] and steps.passed == 0
    assert steps.step(3) and log.asked == [8, 3]
    short = Floored(3, 1)                                      # its rounds run out: one report, last count
    steps = DormantSteps(short)
    for before, after in ((8, 7), (7, 6), (6, 6)):
        assert steps.step(before)
        steps.ran(after)
    assert steps.step(6) and short.reports == [(6, 3)] and short.asked == [8, 6]


def test_joins_within_the_floor_go_on_and_past_the_declared_count_end_it() -> None:
    """Requests that join between steps (the count rises) keep a floored stretch while the count
    stays at most its declared count; past it the stretch is reported and the proposer asked."""
    log = Floored(10, 5)
    steps = DormantSteps(log)
    assert steps.step(8)
    steps.ran(6)                                               # two finished
    assert steps.step(7) and steps.step(8)                     # joiners: 7, then 8 running
    steps.ran(8)
    assert log.reports == [] and log.asked == [8] and steps.passed == 3
    assert steps.step(9)                                       # past the declared count: reported at 8, asked
    assert log.reports == [(8, 3)] and log.asked == [8, 9] and steps.top == 9


@pytest.mark.parametrize("floor", [RuntimeError("floor broke"), True, 0, 9, "3", 8])
def test_an_odd_floor_is_no_floor(caplog, floor: object) -> None:
    log = Floored(10, floor)
    steps = DormantSteps(log)
    with caplog.at_level(logging.WARNING, logger="deepinfer_core.engine.dormant_steps"):
        assert steps.step(8)
        steps.ran(7)
    assert log.reports == [(7, 1)] and steps.floor == 8        # ended by the first finished request
    assert ("dormant_floor failed" in caplog.text) is isinstance(floor, (Exception, bool, str))


def test_quiet_stretches_take_no_floor() -> None:
    class Quiet(Floored):
        def dormant_rounds(self, n: int) -> int:
            self.asked.append(n)
            return 0

        def quiet_rounds(self, n: int) -> int:
            return 10

        def quiet_passed(self, n: int, rounds: int) -> None:
            self.reports.append(("quiet", n, rounds))
    log = Quiet(0, 1)
    steps = DormantSteps(log)
    assert steps.step(8) and steps.features
    steps.ran(7)
    assert log.reports == [("quiet", 7, 1)] and log.floors == []


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_floored_stretches_keep_greedy_output_with_fewer_reports(tiny_checkpoint, async_scheduling: bool) -> None:
    folder = tiny_checkpoint("qwen3")
    expected = run(build(folder))
    class Counting(Sleeper):   # (a stretch that ends with a finished request is reported in two parts)
        def dormant_passed(self, num_requests: int, rounds: int) -> None:
            self.granted = 0
            self.calls.append(("dormant_passed", num_requests, rounds))
            self.round += rounds
    reports = {}
    for floored in (False, True):
        sleeper = Counting(awake=2, asleep=40)
        if floored:
            sleeper.dormant_floor = lambda n: 1
        llm = build(folder, sleeper, async_scheduling=async_scheduling)
        assert run(llm) == expected
        calls = [c for c in sleeper.calls if c[0] == "dormant_passed"]
        assert sum(c[2] for c in calls) == llm.engine.speculative.dormant.steps > 0
        reports[floored] = len(calls)
    assert reports[True] < reports[False]


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_each_finished_request_is_removed_once_and_keeps_its_counters(tiny_checkpoint, async_scheduling: bool) -> None:
    """A length limit ends requests inside dormant stretches and drafted rounds: the proposer
    hears `remove` once per request, in the asynchronous engine as soon as the limit is known
    (`SpeculativeDecoder.forget`, before the request's last token is resolved), and each output
    still carries its speculation counters."""
    class Counting(Sleeper):
        def __init__(self) -> None:
            super().__init__()
            self.removed: list[str] = []

        def remove(self, request_id: str) -> None:
            self.removed.append(request_id)

    folder = tiny_checkpoint("qwen3")
    sleeper = Counting()
    llm = build(folder, sleeper, async_scheduling=async_scheduling)
    outs = llm.generate([{"prompt_token_ids": p} for p in PROMPTS],
                        [SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in MAX_TOKENS])
    assert sorted(sleeper.removed) == sorted(o.request_id for o in outs)
    assert all(o.error is None and o.metrics is not None for o in outs)
    assert sum(o.metrics.spec_proposed for o in outs) > 0


class QuietSleeper(Sleeper):
    """`Sleeper` that keeps its features while asleep: no dormant stretch, a quiet one instead
    (`quiet_rounds`): every step's features must still arrive, in position order without a gap,
    and nothing else may be asked until `quiet_passed`."""

    def __init__(self) -> None:
        super().__init__()
        self.next_position: dict[str, int] = {}
        self.quiet_observed = 0

    def wants_features(self) -> bool:
        self._check("wants_features")
        return True

    def observe_step(self, request_ids, first_positions, counts, row_starts, features) -> None:
        if self.granted:
            self.quiet_observed += 1
        else:
            self._check("observe_step")
        self.observed += 1
        for rid, first, n in zip(request_ids, first_positions, counts):
            assert first == self.next_position.get(rid, 0), (rid, first, self.next_position.get(rid))
            self.next_position[rid] = first + n

    def commit(self, request_id: str, num_tokens: int) -> None:
        self.next_position[request_id] = min(self.next_position.get(request_id, 0), num_tokens - 1)

    def dormant_rounds(self, num_requests: int) -> int:
        self._check("dormant_rounds")
        return 0

    def quiet_rounds(self, num_requests: int) -> int:
        self._check("quiet_rounds")
        self.granted = self._left()
        return self.granted

    def quiet_passed(self, num_requests: int, rounds: int) -> None:
        assert 1 <= rounds <= self.granted, (rounds, self.granted)
        self.granted = 0
        self.calls.append(("quiet_passed", num_requests, rounds))
        self.round += rounds


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_quiet_stretches_hand_over_every_feature_and_ask_nothing_else(tiny_checkpoint, async_scheduling: bool) -> None:
    folder = tiny_checkpoint("qwen3")
    expected = run(build(folder))
    sleeper = QuietSleeper()
    llm = build(folder, sleeper, async_scheduling=async_scheduling)
    assert run(llm) == expected
    reports = [c for c in sleeper.calls if c[0] == "quiet_passed"]
    assert reports and sum(c[2] for c in reports) == llm.engine.speculative.dormant.steps > 0
    assert not any(c[0] == "dormant_passed" for c in sleeper.calls)
    assert sleeper.quiet_observed > 0                       # features kept inside the stretches
    assert llm.engine.speculative.stats.verified > 0        # awake rounds still drafted


class FailingQuiet:
    """Drafts `awake` rounds, then pauses `asleep` with the features kept, in quiet stretches when
    `quiet_rounds` is asked; `observe_step` raises on its `fail_at`-th call while paused. Logs
    each round with the running count it was recorded at."""

    def __init__(self, awake: int = 2, asleep: int = 8, fail_at: int = 5) -> None:
        self.target_layer_ids = (0,)
        self.awake, self.asleep, self.fail_at = awake, asleep, fail_at
        self.round, self.rounds, self.paused_observed = 0, [], 0

    def _left(self) -> int:
        phase = self.round % (self.awake + self.asleep)
        return 0 if phase < self.awake else self.awake + self.asleep - phase

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        self.round += 1
        self.rounds.append(("drafted", len(requests)))
        return [Draft([int(r.token_ids[-1])] * min(2, r.max_tokens)) for r in requests]

    def idle_rounds(self) -> int:
        return self._left()

    def idle_round(self, num_requests: int) -> None:
        self.round += 1
        self.rounds.append(("idle", num_requests))

    def wants_features(self) -> bool:
        return True

    def observe_step(self, request_ids, first_positions, counts, row_starts, features) -> None:
        if self._left():
            self.paused_observed += 1
            if self.paused_observed == self.fail_at:
                raise RuntimeError("observe broke")

    def dormant_rounds(self, num_requests: int) -> int:
        return 0

    def dormant_passed(self, num_requests: int, rounds: int) -> None:
        raise AssertionError("no dormant stretch was granted")

    def quiet_rounds(self, num_requests: int) -> int:
        return self._left()

    def quiet_passed(self, num_requests: int, rounds: int) -> None:
        self.round += rounds
        self.rounds += [("idle", num_requests)] * rounds

    def commit(self, request_id: str, num_tokens: int) -> None:
        pass

    def remove(self, request_id: str) -> None:
        pass


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_an_observe_error_in_a_quiet_stretch_is_reported_as_step_by_step(tiny_checkpoint, async_scheduling) -> None:
    # The failing observation ends the only request: its round is heard at the count step by step
    # hears it (the asynchronous engine: 0 running requests; session 26's review found the
    # stretch settled at the old count there).
    folder = tiny_checkpoint("qwen3")
    runs = []
    for quiet in (True, False):
        proposer = FailingQuiet()
        llm = build(folder, proposer, async_scheduling=async_scheduling)
        if not quiet:
            llm.engine.speculative.dormant._ask_quiet = None
        out = llm.generate([{"prompt_token_ids": PROMPTS[0]}],
                           [SamplingParams(temperature=0, max_tokens=30, ignore_eos=True)])[0]
        assert out.error is not None and "observe" in out.error
        runs.append((proposer.rounds, out.outputs[0].token_ids, llm.engine.speculative.dormant.quiet_steps > 0))
    assert runs[0][:2] == runs[1][:2] and runs[0][2] and not runs[1][2]


class Tracker(Sleeper):
    """A Sleeper that keeps the live token views `track` hands it and reads them while dormant."""

    def __init__(self, fail_track: bool = False) -> None:
        super().__init__()
        self.views: dict[str, object] = {}
        self.seen: dict[str, list[int]] = {}   # the view's known tokens read at each dormant report
        self.fail_track = fail_track

    def track(self, request_id: str, token_ids) -> None:
        assert request_id not in self.views
        self.views[request_id] = token_ids
        if self.fail_track:
            raise RuntimeError("track broke")

    def dormant_passed(self, num_requests: int, rounds: int) -> None:
        super().dormant_passed(num_requests, rounds)
        for rid, view in self.views.items():
            self.seen[rid] = [t for t in view if t >= 0]


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_track_hands_each_request_its_live_tokens_once(tiny_checkpoint, async_scheduling: bool) -> None:
    """`Proposer.track`: one call per request at `add_request`, with a view the engine keeps
    extending, read while the proposer is asked nothing else (dormant stretches); a raising
    `track` changes nothing."""
    folder = tiny_checkpoint("qwen3")
    expected = run(build(folder))
    tracker = Tracker()
    llm = build(folder, tracker, async_scheduling=async_scheduling)
    assert run(llm) == expected
    assert len(tracker.views) == len(PROMPTS)
    finals = {rid: list(view) for rid, view in tracker.views.items()}
    by_prompt = {tuple(f[:len(p)]): f for f in finals.values() for p in PROMPTS if f[:len(p)] == p}
    for prompt, out in zip(PROMPTS, expected):
        assert by_prompt[tuple(prompt)] == prompt + out   # the whole reply, as the engine wrote it
    grown = [len(seen) for seen in tracker.seen.values()]
    assert grown and max(grown) > min(len(p) for p in PROMPTS)   # read mid-run: output tokens there
    broken = build(folder, Tracker(fail_track=True), async_scheduling=async_scheduling)
    assert run(broken) == expected
