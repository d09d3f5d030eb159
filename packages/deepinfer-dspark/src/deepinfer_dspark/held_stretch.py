# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""HeldStretch: a dormant stretch that a wrapper slices for the engine, reported to the wrapped
proposer as one.

`LookupAssist` caps DSpark's dormant stretches at `check_every` rounds where a lookup round
could pay (1-2 requests on the H200), so the engine asks before every step. Forwarding each ask
and report to DSpark (`dormant_rounds` and `dormant_passed`, its pause bookkeeping) cost ~2 us a
step on this repository's CPU, where a dormant step costs 0.8; on the H200's slower host the
wrapper's paused steps ran +0.08-0.11 ms over plain decoding's at 1-2 requests (session 34,
`BENCHMARKS.md`). The wrapper holds DSpark's declaration instead: it asks DSpark once, answers
the engine's next asks from what is left of it, and reports the steps run in one
`dormant_passed`, when the stretch is used up or before any other call reaches DSpark (`flush`).
DSpark thus hears what it hears without the wrapper: one declaration, then its steps.

Quiet stretches (paused with the target features kept: `quiet_rounds` / `quiet_passed`) are held
the same way since session 43: the engine hands over each quiet step's features (`observe_step`)
as it would inside DSpark's own stretch, so those calls do not end a held quiet stretch. On this
repository's CPU (the tiny engine at 2 requests, the H200's profiles, `LookupAssist` asking every
step) DSpark's `dormant_rounds`, `quiet_rounds` and `quiet_passed` cost ~37 us a paused step, where
the engine asked DSpark nothing per step without the wrapper; on the H200 the default's paused
steps ran +0.056-0.13 ms over DSpark alone's at 1-2 requests (session 42, `BENCHMARKS.md`).
Device-free.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)


class HeldStretch:
    """The wrapped proposer's declared dormant stretch and the steps run of it, unreported.

    Args:
        report: the wrapped proposer's `dormant_passed(num_requests, rounds)`.
        report_quiet: its `quiet_passed(num_requests, rounds)` (None: no quiet stretch is held).

    Attributes:
        num_requests: the running requests it was declared at.
        quiet: the stretch held keeps the features (declared by `quiet_rounds`).
        left: its rounds not yet run (0: none held).
        passed: its rounds run and not yet reported.
        failed: a report raised: nothing is held from then on, so the engine's next report
            reaches the wrapped proposer itself and core's `DormantSteps` handles the failure as
            without the wrapper (it logs it and declares no more stretches).
    """

    __slots__ = ("report", "report_quiet", "num_requests", "left", "passed", "failed", "quiet")

    def __init__(self, report: Callable[[int, int], None],
                 report_quiet: Callable[[int, int], None] | None = None) -> None:
        self.report, self.report_quiet = report, report_quiet
        self.num_requests = self.left = self.passed = 0
        self.failed = self.quiet = False

    def rounds(self, num_requests: int, quiet: bool = False) -> int | None:
        """The rounds still declared at `num_requests` of the kind asked (`quiet`: a quiet
        stretch), or None: the wrapped proposer must be asked (after a `flush`)."""
        if self.left > 0 and num_requests == self.num_requests and quiet == self.quiet:
            return self.left
        return None

    def declared(self, num_requests: int, rounds: int, quiet: bool = False) -> None:
        """The wrapped proposer declared `rounds` at `num_requests`, dormant or `quiet` (nothing
        held before: `flush` first; a quiet one is held only with `report_quiet`)."""
        held = rounds > 0 and not (quiet and self.report_quiet is None)
        self.num_requests, self.left, self.passed, self.quiet = num_requests, rounds if held else 0, 0, quiet

    def ran(self, num_requests: int, rounds: int, quiet: bool = False) -> bool:
        """Whether `rounds` steps of the kind (`quiet`) reported at `num_requests` belong to the
        held stretch (then held, and reported at once when it is used up); False: the caller
        reports them itself, after a `flush`."""
        if self.failed or num_requests != self.num_requests or quiet != self.quiet or not 0 < rounds <= self.left:
            return False
        self.left -= rounds
        self.passed += rounds
        if not self.left:
            self.flush()
        return True

    def flush(self) -> None:
        """Reports the steps run and unreported, and ends the stretch (the next ask goes to the
        wrapped proposer)."""
        passed, self.passed, self.left = self.passed, 0, 0
        if not passed:
            return
        report, name = (self.report_quiet, "quiet_passed") if self.quiet else (self.report, "dormant_passed")
        try:
            report(self.num_requests, passed)
        except Exception as exc:  # noqa: BLE001 - the steps ran plain either way (as core's `DormantSteps`)
            self.failed = True
            logger.warning("speculative_config.proposer: %s failed (%s: %s); dormant and quiet steps are "
                           "no longer held", name, type(exc).__name__, exc)
