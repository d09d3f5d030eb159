# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`HeldStretch`: `LookupAssist` slices DSpark's dormant stretch for the engine (asks every
`check_every` steps where a lookup round could pay) while DSpark is asked once for it and hears
of its steps in one report, before any other call reaches it."""

from __future__ import annotations

import math

from deepinfer_core.engine.dormant_steps import DormantSteps
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.held_stretch import HeldStretch
from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
SLOW_SPS = SPSProfile([1, 5, 64, 320], [10.0, 10.0, 9.0, 8.0])   # DSpark can never pay: dormant
DECODE = SPSProfile([1, 64], [1000.0, 1000.0])


def test_held_steps_are_reported_once_used_up_or_flushed() -> None:
    reports: list[tuple[int, int]] = []
    held = HeldStretch(lambda n, r: reports.append((n, r)))
    assert held.rounds(2) is None                  # nothing declared: ask the proposer
    held.declared(2, 5)
    assert held.rounds(2) == 5 and held.rounds(3) is None
    assert held.ran(2, 2) and held.rounds(2) == 3 and reports == []
    assert not held.ran(3, 1) and not held.ran(2, 4)   # another count, more than declared: not its steps
    held.flush()
    assert reports == [(2, 2)] and held.rounds(2) is None
    held.flush()
    assert reports == [(2, 2)]                     # nothing twice
    held.declared(1, 3)
    assert held.ran(1, 1) and held.ran(1, 2)       # used up: reported at once
    assert reports == [(2, 2), (1, 3)] and held.rounds(1) is None
    held.declared(4, 0)
    assert held.rounds(4) is None and not held.ran(4, 1)   # a declaration of none holds nothing


def test_a_quiet_stretch_is_held_apart_from_a_dormant_one() -> None:
    dormant, quiet = [], []
    held = HeldStretch(lambda n, r: dormant.append((n, r)), lambda n, r: quiet.append((n, r)))
    held.declared(2, 4, quiet=True)
    assert held.quiet and held.rounds(2, quiet=True) == 4 and held.rounds(2) is None   # another kind: ask
    assert not held.ran(2, 1) and held.ran(2, 1, quiet=True)   # a dormant report is not its step
    held.flush()
    assert quiet == [(2, 1)] and dormant == [] and held.rounds(2, quiet=True) is None
    held.declared(2, 3)
    assert not held.quiet and held.ran(2, 3) and dormant == [(2, 3)]   # used up: reported as dormant
    alone = HeldStretch(lambda n, r: None)   # no quiet report: a quiet stretch is never held
    alone.declared(1, 5, quiet=True)
    assert alone.rounds(1, quiet=True) is None and not alone.ran(1, 1, quiet=True)


def test_a_quiet_stretch_is_asked_once_and_its_features_do_not_end_it() -> None:
    """DSpark paused with its features kept declares a quiet stretch: the engine, capped at one
    step by the wrapper, asks before every step and hands over every step's features
    (`observe_step`), DSpark hears one ask and, before any other call, one report (session 43:
    its per-step asks and reports cost ~37 us a paused step on this repository's CPU)."""
    from deepinfer_dspark.no_drafter import NoDrafter

    inner, heard = NoDrafter(K), []
    inner.dormant_rounds = lambda n: heard.append(("dormant_rounds", n)) or 0
    inner.quiet_rounds = lambda n: heard.append(("quiet_rounds", n)) or 6
    inner.quiet_passed = lambda n, r: heard.append(("quiet_passed", n, r))
    inner.observe_step = lambda *args: heard.append(("observe_step",))
    inner.wants_features = lambda: heard.append(("wants_features",)) or True
    lookup = LookupAssist(inner, 2, check_every=1, search_budget=math.inf)   # (every request every step)
    views = {"a": [1, 2, 3], "b": [4, 5, 6]}
    for rid, view in views.items():
        lookup.track(rid, view)
    engine = DormantSteps(lookup)
    for step in range(5):
        for view in views.values():
            view.append(100 + step)      # fresh tokens: no lookup round is due
        assert engine.step(2) and engine.features and engine.left == 0   # quiet, one step at a time
        lookup.observe_step(["a", "b"], [3 + step, 3 + step], [1, 1], [0, 1], None)
    assert heard == [("dormant_rounds", 2), ("quiet_rounds", 2)] + [("observe_step",)] * 5
    engine.settle()
    assert lookup.wants_features()        # any other call: DSpark hears the steps first
    assert heard[-2:] == [("quiet_passed", 2, 5), ("wants_features",)]
    for view in views.values():
        view.append(7)
    assert engine.step(2) and heard[-2:] == [("dormant_rounds", 2), ("quiet_rounds", 2)]   # asked anew


class Recording(DSparkProposer):
    """DSpark counting the engine's dormant asks and reports, and checking that every other call
    comes after the steps run were reported."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.asks, self.reported = 0, 0
        self.ran = 0   # steps the engine ran dormant (set by the test)

    def dormant_rounds(self, num_requests: int) -> int:
        assert self.reported == self.ran   # heard of every step before being asked again
        self.asks += 1
        return super().dormant_rounds(num_requests)

    def dormant_passed(self, num_requests: int, rounds: int) -> None:
        self.reported += rounds
        super().dormant_passed(num_requests, rounds)

    def idle_rounds(self) -> int:
        assert self.reported == self.ran
        return super().idle_rounds()


def test_dspark_is_asked_once_a_stretch_while_the_engine_asks_every_step(fake_runner) -> None:
    inner = Recording(fake_runner(K, 0.9), K, SLOW_SPS, decode=DECODE)
    lookup = LookupAssist(inner, 2, check_every=1, search_budget=math.inf)   # (every request every step)
    views = {"a": [1, 2, 3], "b": [4, 5, 6]}
    for rid, view in views.items():
        lookup.track(rid, view)
    lookup.propose([DraftRequest(rid, list(view), K, 0.0, 0, 1.0, 0.0, 0, 10) for rid, view in views.items()])
    dormant = DormantSteps(lookup)
    declared = inner.dormant_rounds(2)   # (what DSpark declares at 2 requests: a long stretch)
    inner.ran = inner.reported
    assert declared > 4
    asks, engine_asks = inner.asks, 0
    for step in range(declared - 1):
        for view in views.values():
            view.append(100 + step)      # fresh tokens: no lookup round is ever due
        left = dormant.left
        assert dormant.step(2)
        engine_asks += left == 0
        inner.ran += 1
    assert engine_asks == declared - 1   # the engine asked before every step (capped at 1)
    assert inner.asks == asks + 1        # DSpark once, for its whole stretch
    assert inner.reported == 0           # held: one report for the stretch, not one a step
    dormant.settle()                     # (the engine reports its steps before any other call)
    assert lookup.idle_rounds() >= 0     # a call reaching DSpark: it hears of every step first
    assert inner.reported == inner.ran


def test_a_copy_reports_to_its_own_dspark_and_the_wrapper_pickles() -> None:
    """The held report reads the wrapped proposer at call time (session 34's review: a lambda
    over the first one sent a deep copy's steps to the original, and could not be pickled)."""
    import copy
    import pickle

    from deepinfer_dspark.no_drafter import NoDrafter

    first = LookupAssist(NoDrafter(4), 2)
    second = copy.deepcopy(first)
    heard: dict[str, tuple[int, int]] = {}
    first.inner.dormant_passed = lambda n, r: heard.setdefault("first", (n, r))
    second.inner.dormant_passed = lambda n, r: heard.setdefault("second", (n, r))
    second._held.declared(1, 4)
    second.dormant_passed(1, 1)               # held
    second.running(1)                         # a call reaching DSpark: the held step first
    assert heard == {"second": (1, 1)}
    assert isinstance(pickle.loads(pickle.dumps(LookupAssist(NoDrafter(4), 2))), LookupAssist)


def test_a_failing_report_is_left_to_core(folders, kit) -> None:
    """DSpark's `dormant_passed` raising: the wrapper stops holding, so core's next report reaches
    DSpark, and core declares no more stretches (as without the wrapper); no request fails and
    the replies are plain decoding's."""
    from deepinfer_core import SamplingParams

    target, drafter = folders
    one = SPSProfile([5, 10, 640], [300.0, 100.0, 50.0])   # drafting pays at 1 request only
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": one, "decode_profile": DECODE, "prompt_lookup_min": 2}
    prompts = [{"prompt_token_ids": [5, 6, 7] * 6}, {"prompt_token_ids": [9, 10, 11, 12] * 5}]
    params = SamplingParams(temperature=0, max_tokens=60, ignore_eos=True)
    plain = kit.build(target, None, max_num_seqs=4)
    want = [o.outputs[0].token_ids for o in plain.generate(prompts, params)]
    plain.close()
    llm = kit.build(target, spec, max_num_seqs=4)
    proposer = llm.engine.speculative.proposer
    tries = []

    def broken(n: int, r: int) -> None:
        tries.append((n, r))
        raise RuntimeError("boom")
    proposer.inner.dormant_passed = broken
    outs = llm.generate(prompts, params)
    assert [o.outputs[0].token_ids for o in outs] == want and all(o.error is None for o in outs)
    assert proposer._held.failed and len(tries) == 2          # the held report, then core's own
    assert llm.engine.speculative.dormant._ask is None        # core: no more stretches
    llm.close()
