# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""FeatureKeeping: what keeping the target features at a paused load costs, and when declining them pays.

A mixin of `PausePolicy` (so of `DSparkProposer`): it reads the proposer's `flush_costs`,
`decode`, `costs`, `acceptance`, `pauses` and the bookkeeping `_ledger_saved`, `_gap_cost`,
`_ledger_ruled`, `_ruled_out` and calls `_rounds_timed` (`StepTiming`), `_ledger_gain`
(`StragglerJudgement`), `_settled`, `cannot_pay` and `expected_loss` (`PausePolicy`); it turns
`ledger_decline` off:

- `_keep_cost`: what keeping the features costs a paused step (the flush it grows), which makes
  a young bucket's loss decline them where that exceeds the probe share (`_dear_to_keep`,
  `DraftCosts.probe_share`);
- `_decline_saves`: what a step declined after a measured loss saves;
- `_regret_gaps`: when declining after measured losses stops (the gaps it left cost more at
  winning loads than the declines saved).

Device-free.
"""

from __future__ import annotations

CAPTURE_SHARE = 0.02          # a step's feature capture, in plain steps (H200, session 20: 1.5-2% at
# 8-32 requests, 3-5% at 64-256): what a step declined after a measured loss saves, at least


class FeatureKeeping:
    """The feature-keeping prices of `PausePolicy` (see the module docstring)."""

    def _keep_cost(self, batch: int) -> float:
        """Plain steps a paused step at `batch` with the features kept costs the flush that ends
        the pause: `batch` pairs at `FlushCosts.per_pair` seconds each, in plain steps at the
        decode profile (the capture itself is `CAPTURE_SHARE`). 0.0 without `_rounds_timed`
        (decisions stay functions of the rounds' tokens) or before the slope is known."""
        per_pair = self.flush_costs.per_pair() if self._rounds_timed(batch) and self.decode is not None else None
        return 0.0 if per_pair is None else per_pair * batch * self.decode.at(batch)

    def _dear_to_keep(self, batch: int) -> bool:
        """Whether a young bucket's losing round declines the features as a settled loss would:
        keeping them costs a paused step more than `probe_share` (`DraftCosts`; `_keep_cost`: no pause amortizes
        a flush that grows with it), and more than a full round at `batch` gains over a plain step
        at the mean accepted drafts measured over all loads (`FullAcceptance.mean`: a request
        accepts as many drafts in any batch, so one unlucky round at a winning load declines
        nothing). In `sim_engine_calls.py --flush-per-pair 0.01 --measure-rounds --p 0.85`
        (session 40) the young buckets at 19-31 requests kept the features at a keep cost of
        0.18-0.30 plain steps a step where a full round gained 2-9%, and the probes' flushes cost
        32 requests 21% of plain decoding's time (0.823x; on the H200 in session 39, 0.844x)."""
        keep = self._keep_cost(batch)
        if self.costs is None or keep <= self.costs.probe_share:
            return False
        mean = self.acceptance.full.mean()
        return mean is not None and self.costs.gain(batch, batch * (1.0 + mean)) - 1.0 < keep

    def _decline_saves(self, batch: int) -> float:
        """Plain steps a step declined after a measured loss at `batch` saves, at least: its
        capture (`CAPTURE_SHARE`) and its pairs' share of the next flush (`_keep_cost`)."""
        return CAPTURE_SHARE + self._keep_cost(batch)

    def _regret_gaps(self, batch: int, share: float, rounds: int = 1) -> None:
        """`rounds` rounds at `batch`, where drafting has won (a settled average `g` above 1), ran
        a `share` of their requests plain for a gap in their context: declining after measured
        losses costs drafting where it pays (a batch's last requests reach a winning load), about
        `(g - 1) * share * rounds` plain steps. Once that cost, summed, exceeds what the steps
        declined after measured losses saved (`_decline_saves` each: the capture and the flush
        the kept pairs would have grown, a lower bound: they also spare probes), features are
        declined from then on only where drafting is ruled out outright (`cannot_pay`,
        `expected_loss`) or keeping them is dear (`_dear_to_keep`). On the H200 (session 21, 2 requests, a drafter
        that won 1.41 at 1) a loss settled at 2 gapped both requests and the last one ran alone,
        plain, for half the batch; in `sim_engine_calls.py --equal --p 0.75` (batches of 8 ending
        together) a regret at the first gapped round at 2 kept 8's features, and its probes, for
        good: 0.930x of plain decoding at 8 (weighed: 0.947x; no regret from dormant batches:
        0.954x). The gap's cause is not known beyond a step declined after a loss: one left by the
        outright declines counts too."""
        gain = self._ledger_gain(self.pauses, batch)   # (`rescale_stragglers`: at the factor read now)
        if gain is None or gain <= 1 or not self._settled(self.pauses, batch):
            return
        self._gap_cost += (gain - 1.0) * share * rounds
        if self._gap_cost <= self._ledger_saved:
            return
        self.ledger_decline = False
        for bucket in self._ledger_ruled:
            if not self.cannot_pay(bucket) and not self.expected_loss(bucket):
                self._ruled_out.discard(bucket)
        self._ledger_ruled.clear()
