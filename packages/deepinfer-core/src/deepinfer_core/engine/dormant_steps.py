# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DormantSteps: stretches of steps that a paused proposer needs nothing from.

A proposer paused at a load where it declines the target's features (DSpark where drafting
cannot pay) is still asked three things per step: `wants_features` before the launch, then
`idle_rounds` and `idle_round` for the next step's drafts. For the tiny test engine at 64
requests on a 2-core CPU those calls cost ~30 us a step (78 us with a new batch's prefill
features captured; session 18, packages/deepinfer-dspark/BENCHMARKS.md), where an H200 decode
step of SmolLM2-135M takes 1-3 ms at 8-128 requests and its host is the bottleneck: all for
answers known in advance. A proposer with `dormant_rounds(num_requests) -> int` can declare such a stretch at
once: the engine then asks nothing for that many steps while the number of running requests
stays the same, and reports them afterwards in one call, `dormant_passed(num_requests, rounds)`
(see `deepinfer_core.Proposer`): before any other call to the proposer, or, when a step
finishes requests, right after that step (its round at the new count). Those steps capture no
features and carry no drafts: their output is plain decoding's.

A proposer paused where it keeps the features (DSpark paused at a load where drafting may pay
later: its buffer must hold every position) can likewise declare a quiet stretch with
`quiet_rounds(num_requests) -> int`, asked when `dormant_rounds` declares none: its steps
capture the features and the engine hands them over with `observe*` as every step, but asks
nothing else; they are reported with `quiet_passed(num_requests, rounds)`. On this repository's
CPU a paused step that keeps its features cost ~48 us more than a dormant one, the H200's host
0.24 ms at 1 request (a fifth of a decode step; session 26); the asks were ~9 us of the 48.

A proposer with `dormant_floor(num_requests) -> int` may let a dormant stretch hold over a range
of counts: requests that finish then do not end it while the count stays at or above the floor,
and its steps are reported once, at the count running after the last of them (see
`deepinfer_core.Proposer`).
Device-free.
"""

from __future__ import annotations

import logging
import operator

logger = logging.getLogger(__name__)


class DormantSteps:
    """The engine's side of `Proposer.dormant_rounds` for one proposer.

    Args:
        proposer: the engine's proposer; dormancy is used only when it has both
            `dormant_rounds` and `dormant_passed`, quiet stretches when it also has both
            `quiet_rounds` and `quiet_passed`.

    Attributes:
        features: the current stretch keeps the target features (a quiet stretch).
        num_requests: the running requests of the current stretch (its latest count).
        floor, top: the counts the current stretch holds at (`dormant_floor`; both its declared
            count without a floor).
        left: steps of the stretch not yet run.
        passed: steps of the stretch run and not yet reported.
        steps: dormant steps run in all, quiet ones included (metrics).
        quiet_steps: quiet steps run in all (metrics).
    """

    def __init__(self, proposer: object) -> None:
        ask, report = getattr(proposer, "dormant_rounds", None), getattr(proposer, "dormant_passed", None)
        self._ask = ask if callable(ask) and callable(report) else None
        self._report = report
        quiet, quiet_report = getattr(proposer, "quiet_rounds", None), getattr(proposer, "quiet_passed", None)
        self._ask_quiet = quiet if self._ask is not None and callable(quiet) and callable(quiet_report) else None
        self._report_quiet = quiet_report
        floor = getattr(proposer, "dormant_floor", None)
        self._ask_floor = floor if self._ask is not None and callable(floor) else None
        self.features = False
        self.num_requests = self.floor = self.top = 0
        self.left = 0
        self.passed = 0
        self.steps = 0
        self.quiet_steps = 0
        self._warned = False

    def step(self, num_requests: int) -> bool:
        """Whether the coming step, with `num_requests` running requests and no drafts, is
        dormant: nothing is asked of the proposer for it, and no features are captured unless
        the stretch is quiet (`features`: then only `observe*` is called). A stretch ends when
        its steps run out or the number of running requests changes (leaves the stretch's
        [`floor`, `top`] with a `dormant_floor`); it is then reported (`settle`) and the proposer
        is asked again.

        A proposer whose `dormant_rounds` raises or returns anything but a positive integer
        only loses the stretch (the step runs as usual; logged once); one whose `dormant_passed`
        raises is not asked again (logged)."""
        if self.left > 0 and self.floor <= num_requests <= self.top:   # (its count, or within its floor)
            self.num_requests = num_requests
            self.left -= 1
            self.passed += 1
            self.steps += 1
            self.quiet_steps += self.features
            return True
        self.settle()
        if self._ask is None:
            return False
        rounds, features = self._rounds(self._ask, num_requests, "dormant_rounds"), False
        if rounds <= 0 and self._ask_quiet is not None:
            rounds, features = self._rounds(self._ask_quiet, num_requests, "quiet_rounds"), True
        if rounds <= 0:
            return False
        self.features = features
        self.floor = num_requests if features or self._ask_floor is None else self._floor_of(num_requests)
        self.num_requests, self.top, self.left, self.passed = num_requests, num_requests, rounds - 1, 1
        self.steps += 1
        self.quiet_steps += features
        return True

    def _rounds(self, ask, num_requests: int, name: str) -> int:
        """The proposer's answer as an int; 0 (logged once) when it raises or is no integer."""
        try:
            answer = ask(num_requests)
            if isinstance(answer, bool):
                raise TypeError("a bool is no number of rounds")
            return operator.index(answer)   # an int, numpy's included
        except Exception as exc:  # noqa: BLE001 - a faulty plug-in only loses the stretch
            if not self._warned:
                self._warned = True
                logger.warning("speculative_config.proposer: %s failed or returned no integer "
                               "(%s: %s); %s", name, type(exc).__name__, exc,
                               "its stretch has no floor" if name == "dormant_floor" else "its steps run as usual")
            return 0

    def _floor_of(self, num_requests: int) -> int:
        """The proposer's `dormant_floor` in [1, `num_requests`]; `num_requests` when it raises or
        is no integer (logged once, as `dormant_rounds`' failures are) or falls outside (not logged)."""
        floor = self._rounds(self._ask_floor, num_requests, "dormant_floor")
        return floor if 1 <= floor <= num_requests else num_requests

    def ran(self, num_requests: int) -> None:
        """After a dormant step's update, with the requests then running: when they are not the
        stretch's (the step finished some), the stretch ends here. Its steps before this one are
        reported at the stretch's count, this one at the new count, as a proposer asked after
        every step would have heard them (`idle_round` gets the requests running after it).
        Within the stretch's floor (`dormant_floor`) it goes on instead, at the new count."""
        if num_requests == self.num_requests or not self.passed:
            return
        if self.floor <= num_requests <= self.top:   # within the floor: the stretch goes on at the new count
            self.num_requests = num_requests
            return
        earlier, self.passed = self.passed - 1, 0
        self.left = 0
        if earlier:
            self._call(self.num_requests, earlier)
        self.num_requests = num_requests
        self._call(num_requests, 1)

    def settle(self) -> None:
        """Reports the stretch's steps run so far (`dormant_passed`) and ends it."""
        passed, self.passed, self.left = self.passed, 0, 0
        if passed:
            self._call(self.num_requests, passed)

    def _call(self, num_requests: int, rounds: int) -> None:
        report, name = (self._report_quiet, "quiet_passed") if self.features else (self._report, "dormant_passed")
        if report is None:
            return
        try:
            report(num_requests, rounds)
        except Exception as exc:  # noqa: BLE001 - the steps ran plain either way
            logger.warning("speculative_config.proposer: %s failed (%s: %s); no more dormant or quiet "
                           "stretches for this engine", name, type(exc).__name__, exc)
            self._ask = self._report = self._ask_quiet = self._report_quiet = None
