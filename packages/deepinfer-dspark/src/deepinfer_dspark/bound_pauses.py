# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""BoundPauses: loads the bounds rule out, paused with few asks and no features.

Where drafting is ruled out outright (`PausePolicy.cannot_pay`: even accepting every draft loses;
`expected_loss`: so does the measured acceptance's upper bound), `DSparkProposer` declines the
target's features and the engine asks it nothing for stretches of steps (`dormant_rounds`). On
the tiny target at 64 requests with replies ending one by one (session 51,
`benchmarks/dormant_host_cost.py`) the default still asked every step or two, and its host
work a step ran +32 us over plain decoding's (+69 at 256): a stretch ended whenever a request
finished, a ruled-out pause of `probe_every` rounds ran out every 8 rounds into a step asked one
by one, and a pause set by a partial probe kept the features where the bound had ruled the load
out since. A mixin of `DSparkProposer` for those three:

- `dormant_floor`: a dormant stretch holds over its bucket's counts (`deepinfer_core.Proposer`);
- `_bound_pause`: after a bound's rule-out a load pauses `probe_every` rounds, doubling while the
  bound keeps ruling it out by a wide margin, up to `BOUND_PAUSE_STEPS` times `probe_every`;
- `_rule_out_hopeless` / `_hopeless_lapsed` / `_hopeless_left`: a pause that keeps the features
  declines them while the bound rules its bucket out, judged at the bucket's fewest requests
  and again every bound pause (ruled in again, features kept, when the bound clears).

It reads the proposer's `pauses`, `probe_every`, `decline_features`, `measure_plain_steps`,
`skipped_rounds`, `drafted_rounds`, `num_tokens`, `costs`, `acceptance`, `_ruled_out`,
`_gapped_stretch`, `draining_batch`, `stragglers`, `_pause_for`, `_bound_tokens`, `cannot_pay` and
`expected_loss`, and keeps `_bound_backoff`, `_hopeless_checked` and `_hopeless_until`.
Device-free.
"""

from __future__ import annotations

from deepinfer_dspark.pause_ledger import bucket_floor, ledger_bucket
from deepinfer_dspark.pause_policy import MIN_MEASURED_REQUESTS

BOUND_PAUSE_STEPS = 4   # a bound's pause grows to at most this many times `probe_every`
ROBUST_GAIN = 0.75      # ... and only where the bounds' best round gains at most this over plain decoding


class BoundPauses:
    """The bound-ruled half of `DSparkProposer`'s pauses (see the module docstring)."""

    def dormant_floor(self, num_requests: int) -> int:
        """The fewest running requests the dormant stretch just declared at `num_requests` holds at
        (see `deepinfer_core.Proposer.dormant_floor`): the smallest count of its bucket
        (`bucket_floor`: its pause is the bucket's, `MeasuredRates` counts per power of two, which
        the buckets refine), so `dormant_passed` at the stretch's last count records what the steps
        one by one would, but for what the steps declined after a measured loss saved
        (`_ledger_saved`: judged at that count). A stretch declared for gaps (`_all_gapped`: every
        running request has a gap) holds there too while the engine only drains what it holds and
        no request waits (`draining_batch`, `Stragglers.waiting`: every request alive is tracked, a
        preempted one included): requests that finish leave only gapped ones, and its pause
        (`NOTHING_READY_PAUSE` where none was left) is the bucket's. Not otherwise: a request that
        joined within the floor would run its steps without features (a gap for good), where
        asked it would capture them. Until session 66 a gapped stretch held at its own count only:
        in a batch's drain at 64-256 requests each request that finished ended it, ~0.6 asks and
        reports a step (BENCHMARKS.md). `num_requests` itself with `measure_plain_steps` (its
        samples time each count's steps)."""
        if self.measure_plain_steps or self._gapped_stretch and (
                not self.draining_batch or self.stragglers.waiting(num_requests)):
            return num_requests
        return min(bucket_floor(num_requests), num_requests)

    def _rounds_seen(self) -> int:
        """Rounds run so far, drafted or not (the clock of the checks below)."""
        return self.skipped_rounds + self.drafted_rounds

    def _bound_pause(self, batch: int) -> int:
        """The rounds a load ruled out by a bound pauses before it is judged again: `probe_every`
        at first, doubling while the bound keeps ruling it out at its bucket by a wide margin
        (`_bound_gain` at most `ROBUST_GAIN`; up to `BOUND_PAUSE_STEPS` times `probe_every`),
        `probe_every` again once the bucket drafts, the bound clears it or the margin narrows.
        Each judgement cost a step asked one by one here, or an ask (on this CPU at 64 requests,
        +20 against +12-16 us of host work a step over plain decoding's with the growth; session
        51). A longer pause also holds a load the bound has cleared meanwhile: in
        `sim_engine_calls.py --p 0.9 --bound-only 1 --seeds 8`, growth at every bound-ruled load
        (4x) cost 2 requests 1.195 -> 1.173 of plain decoding, and growth up to
        `max_probe_every` cost 8 requests 1.156 -> 1.037 in a review's worst seed: there the
        bound ruled the loads out by a hair, early in the replies."""
        bucket = ledger_bucket(batch)
        rounds = self._bound_backoff.get(bucket, self.probe_every)
        robust = self._bound_gain(batch) <= ROBUST_GAIN
        self._bound_backoff[bucket] = min(2 * rounds, BOUND_PAUSE_STEPS * self.probe_every) if robust \
            else self.probe_every
        return rounds

    def _bound_gain(self, batch: int) -> float:
        """The most a full round at `batch` could gain over plain decoding by the bounds
        (`DraftCosts.gain_factor` times the tokens a request emits): each request accepting the
        measured acceptance's upper bound, scaled as `expected_loss` scales it (`_bound_tokens`), once measured;
        every draft accepted before. 0.0 without both profiles (no bound rules anything out)."""
        if self.costs is None:
            return 0.0
        upper = self.acceptance.full.upper() if self.acceptance.full.most >= MIN_MEASURED_REQUESTS else None
        accepted = float(self.num_tokens) if upper is None else \
            min(float(self.num_tokens), self._bound_tokens(batch, upper) - 1.0)
        return self.costs.gain_factor(batch) * (1.0 + accepted)

    def _hopeless(self, batch: int) -> bool:
        """Whether the bounds rule out drafting at every count of `batch`'s bucket: judged at its
        fewest requests (`bucket_floor`), where a round costs least against plain steps."""
        low = bucket_floor(batch)
        return self.cannot_pay(low) or self.expected_loss(low)

    def _rule_out_hopeless(self, batch: int) -> bool:
        """Whether `batch`'s bucket, paused with the features kept, is ruled out now (`_hopeless`),
        what `idle_rounds` judges only once the pause has run out. The pause keeps its length and
        declines the features (`_pause_for`) until the bound is judged again, a bound pause later
        (`_hopeless_lapsed`). A pause set before the evidence said so (a partial probe's at a young
        bucket: no decline) otherwise kept them to its end: on the tiny target (session 51),
        batches of 64 kept them in the first 48 of 129 steps of every call, under a pause of 226
        rounds at the bucket of 49-64 requests, which each batch met only at its start. A no is
        asked again after `probe_every` more rounds. Never with `decline_features` off."""
        if not self.decline_features or self.pauses.left(batch) <= 0:
            return False
        bucket, now = ledger_bucket(batch), self._rounds_seen()
        if now < self._hopeless_checked.get(bucket, -1):
            return False
        if not self._hopeless(batch):
            self._hopeless_checked[bucket] = now + self.probe_every
            return False
        self._pause_for(self.pauses.left(batch), batch, ruled_out=True)
        self._hopeless_until[bucket] = now + self._bound_pause(batch)
        return True

    def _hopeless_lapsed(self, batch: int) -> bool:
        """Whether `batch`'s bucket, ruled out by `_rule_out_hopeless`, is ruled in again now: its
        bound pause is over and the bound no longer rules it out (the rest of its pause then keeps
        the features, as before the rule-out); while it still does, another bound pause."""
        bucket = ledger_bucket(batch)
        until = self._hopeless_until.get(bucket)
        if until is None or self._rounds_seen() < until:
            return False
        if self._hopeless(batch):
            self._hopeless_until[bucket] = self._rounds_seen() + self._bound_pause(batch)
            return False
        del self._hopeless_until[bucket]
        self._ruled_out.discard(bucket)
        return True

    def _hopeless_left(self, batch: int, left: int) -> int:
        """`left` dormant rounds, cut to the next judgement of a `_rule_out_hopeless` rule-out."""
        until = self._hopeless_until.get(ledger_bucket(batch))
        return left if until is None else max(min(left, until - self._rounds_seen()), 0)
