# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""StepTiming: how `DSparkProposer` uses the step times it measures (`MeasuredRates`).

A mixin: it reads the proposer's `rates`, `costs`, `decode`, `sps`, `verify_rates`,
`num_tokens`, `measure_step_times`, `measure_round_times`, `measure_plain_steps`,
`bound_only`, `bound_only_untimed` and `_retime_every`. With
`measure_step_times` every step is declared to `rates` and the comparison with plain decoding
is scaled by the rounds' over the plain steps' correction, re-timing runs keeping both fresh;
with `measure_round_times` only runs of drafted rounds count, each against the price the pause
policy puts on it, and their correction alone scales the comparison; with neither, nothing is
read. With `measure_plain_steps` the plain side is scaled too, by the plain steps timed in
dormant and quiet stretches (no per-step cost: `MeasuredRates.stretch_asked`) or, where a bucket
drafts on without such stretches, in plain re-timing runs (`_plain_run_due`). Device-free.
"""

from __future__ import annotations

from deepinfer_dspark.measured_rates import (MIN_PERIOD, PART, PLAIN, RETIMED, ROUND_SAMPLES, SPEC, STRETCH,
                                             batch_bucket)

PLAIN_SAMPLES = 3   # samples (stretches' or re-timing runs') before `measure_plain_steps` reads a plain estimate
RETIME_GAIN = 1.35  # `measure_plain_steps`: plain steps are re-timed where the bucket's judged gain is
# below this (a decode profile read up to 35% slow could turn it into a loss: session 46 on the H200,
# a profile read 11-35% slow at 1-8 requests, rounds at 5-8 judged 1.19-1.33 that realized 0.88-1.09)


class StepTiming:
    """The measured-step-time half of `DSparkProposer` (see the module docstring)."""

    def _correction(self, batch: int) -> float:
        """The measured round / plain step-time ratio at `batch` (`measure_step_times`), the
        rounds' measured / predicted ratio (`measure_round_times`; an estimate without a sample for
        a period ages toward 1 here, `MeasuredRates.relax`), else 1; with `measure_plain_steps`
        either of the last two is divided by the plain steps' measured / predicted ratio over
        stretches or re-timing runs (`_plain_correction`). With `measure_round_times`, 1 where
        `_rounds_timed` prices the rounds at `batch` on the profiles (the plain side's correction
        then goes unread too: alone it would be a one-sided correction the other way)."""
        if self.measure_round_times and not self._rounds_timed(batch):
            return 1.0
        plain = self._plain_correction(batch) if self.measure_plain_steps else 1.0
        if self.measure_round_times:
            if self.rates.due(SPEC, batch, self._retime_every):
                self.rates.relax(SPEC, batch, self._retime_every)
            return self.rates.correction(SPEC, batch, least=ROUND_SAMPLES) / plain
        return self.rates.ratio(batch) if self.measure_step_times else 1.0 / plain

    def _rounds_timed(self, batch: int) -> bool:
        """Whether the drafted rounds at `batch` requests are priced at their measured time
        (`measure_round_times`): not up to `bound_only` requests with `bound_only_untimed`. The
        correction is one-sided: it times the rounds, not the plain steps they replace (those only
        with `measure_plain_steps`, opt-in), and a lone request's step is short enough for the
        host's per-step work to be a large share of it: on the H100 of session 52's process b, real
        plain steps ran 1.13x their profile and fixed-7's rounds 1.28x, so the rounds read 1.28x
        dear where they were 1.13x. Plain re-timing runs (`_plain_run_due`) and the flush costs
        (`PausePolicy._probe_overhead`, `_keep_cost`) go unread at those loads too. On H100s
        (session 52, 1 request, 16 prompt sets a process) the timed default paused 36-76% of its
        rounds in three of five processes and ran 0.82-0.95 of fixed-7 there, the untimed one never
        paused (0.97-0.99)."""
        return self.measure_round_times and not (self.bound_only_untimed and batch <= self.bound_only)

    def _timing_read(self, batch: int) -> bool:
        """Whether any pricing reads the step times measured at `batch`'s bucket: every bucket
        with `measure_step_times`, else those whose rounds `_rounds_timed` prices at their
        measured time (plain re-timing runs and `measure_plain_steps` need that too). Where none
        does (1 request by default, `bound_only_untimed`), a round is not timed
        (`MeasuredRates.skip`; session 55: ~5 us a round on this repository's CPU). It is still
        counted (`_count`): a plain re-timing run started at another bucket counts down over
        every bucket's rounds (`MeasuredRates.plain_left`; the review of session 55)."""
        return self.measure_step_times or self._rounds_timed(batch_bucket(batch))

    def _plain_correction(self, batch: int) -> float:
        """Measured / predicted plain step time at `batch`'s bucket: the estimate of the plain
        re-timing runs (RETIMED: steps asked one by one, timed as the rounds are) or of the
        stretches (STRETCH), whichever holds `PLAIN_SAMPLES` samples and was sampled last
        (`MeasuredRates.fresher`: neither kind ages), else 1."""
        kind = self.rates.fresher((RETIMED, STRETCH), batch, PLAIN_SAMPLES)
        return 1.0 if kind is None else self.rates.correction(kind, batch)

    def _plain_run_due(self, batch: int) -> bool:
        """Whether a drafted round at `batch` that left the bucket unpaused should be followed by
        a plain re-timing run (`measure_plain_steps` with `measure_round_times`, which times the
        steps; `measure_step_times` re-times both kinds its own way): the bucket's judged gain is
        below `RETIME_GAIN` (where a plain side read slow could hide a loss) and it drafted
        `MIN_PERIOD` rounds without a plain sample of either kind or a run (`_retime_every` once
        its plain side is read: `PLAIN_SAMPLES` samples, two runs' worth)."""
        if not (self.measure_plain_steps and self._rounds_timed(batch)) or self.decode is None \
                or self.pauses.left(batch):
            return False
        gain = self.pauses.gain(batch)
        if gain is None or gain >= RETIME_GAIN:
            return False
        measured = self.rates.fresher((RETIMED, STRETCH), batch, PLAIN_SAMPLES) is not None
        return self.rates.due(RETIMED, batch, self._retime_every if measured else MIN_PERIOD)

    def _timing_plain(self) -> bool:
        """Whether a plain re-timing run is in progress: the engine is then asked before each of
        its steps (no dormant or quiet stretch), and they are declared RETIMED (`_record`)."""
        return self.measure_plain_steps and self.rates.plain_left > 0

    @property
    def retiming(self) -> bool:
        """Whether a plain re-timing run is in progress (`LookupAssist` drafts no lookup round then:
        its steps must be plain ones)."""
        return self._timing_plain()

    def _stretch_asked(self, num_requests: int) -> None:
        """A dormant or quiet stretch is asked for (`measure_plain_steps`: times the steps
        reported since the last ask, `MeasuredRates.stretch_asked`)."""
        if self.measure_plain_steps:
            self.rates.stretch_asked(num_requests)

    def _stretch_ran(self, num_requests: int, rounds: int) -> None:
        """`rounds` plain steps of a stretch ran at `num_requests` (`MeasuredRates.stretch_ran`)."""
        if self.measure_plain_steps and rounds > 0:
            self.rates.stretch_ran(num_requests, rounds / self.decode.at(num_requests) if num_requests else 0.0)

    def _probing(self) -> bool:
        """Whether a re-timing run of drafted rounds is in progress (see `MeasuredRates`)."""
        return self.measure_step_times and self.rates.run_left > 0

    def _count(self, kind: str, batch: int, rounds: int = 1) -> None:
        if (self.measure_step_times or self.measure_round_times) and batch:
            self.rates.count(kind, batch, rounds)

    def _probe_due(self, batch: int) -> bool:
        """Whether to draft a re-timing run although `cannot_pay(batch)` holds: only the measured
        step times rule drafting out (the profiles alone would not), and the drafter has not run at
        this bucket for `max_probe_every` rounds (a slow spell measured once must not rule
        drafting out for good)."""
        if not self.measure_step_times or not self.rates.due(SPEC, batch, self._retime_every):
            return False
        return batch * (1 + self.num_tokens) * self.costs.round_rate(batch) > batch * self.decode.at(batch)

    def _record(self, began: float, batch: int, verified: int | None, asked: int = 0) -> None:
        """Declares the step that started at `began` to `rates`: a round in which the drafter ran
        for `asked` of the `batch` requests and `verified` drafts go to the target (0 included:
        the draft was paid for), or a plain step (None). Only with both profiles and
        `measure_step_times` or `measure_round_times`. With `measure_round_times` a round is
        predicted as the pause policy prices it (`_plan_pause`: by its verified tokens with the
        k = 1 profile, else as the full round whatever it verifies, so the sample is that price's
        error), and one that price does not model (requests not drafted for) is declared `PART`:
        it breaks a run and is never read. (Until session 36, without the k = 1 profile, a round
        verifying fewer than k drafts for some request was `PART` too: confidence rounds were
        then almost never timed.)"""
        if self.decode is None or self.sps is None or not (self.measure_step_times or self.measure_round_times):
            return
        if not batch:
            self.rates.pause()
        elif verified is None:   # a plain step; in a plain re-timing run, one of its samples
            self.rates.record(began, RETIMED if self._timing_plain() else PLAIN, batch, 1.0 / self.decode.at(batch))
        elif not self.measure_round_times:
            self.rates.record(began, SPEC, batch, 1.0 / self.costs.round_rate(batch))
        elif self.verify_rates.short is not None and asked == batch:
            self.rates.record(began, SPEC, batch, 1.0 / self.verify_rates.for_batch(batch).at(batch + verified))
        else:   # priced as the full round whatever it verifies: so is it timed (the price's error)
            self.rates.record(began, SPEC if asked == batch else PART, batch, 1.0 / self.costs.round_rate(batch))
