# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""PausedSteps: what `DSparkProposer` answers about the engine's steps without drafts.

Between drafted rounds the engine asks its proposer about the steps to come and reports the
steps that ran without drafts (`deepinfer_core.Proposer`):

- `idle_rounds`: rounds still paused (a run-out pause judged again against the bounds);
- `wants_features`: whether the next step captures the target's features;
- `dormant_rounds` / `dormant_passed`: a pause with the features declined, declared at once
  (the engine then asks nothing per step) and reported when it ends;
- `quiet_rounds` / `quiet_passed`: the same with the features kept (buffered, as paused);
- `running` / `idle_round`: a round priced at more requests than asked, a paused round.

A mixin of `DSparkProposer`: it reads and updates the state `PausePolicy`, `BoundPauses`,
`StepTiming`, `LateBookkeeping` and `DraftingLease` keep (`pauses`, `openings`, `acceptance`,
`rates`, `feed`, `pending`, `_last_batch`, `_cleared`, `_ruled_out`, `_ledger_ruled`, ...). A
round without drafts ends a lease (`DraftingLease`). Device-free.
"""

from __future__ import annotations

from deepinfer_dspark.measured_rates import PLAIN
from deepinfer_dspark.pause_ledger import ledger_bucket
from deepinfer_dspark.pause_policy import NOTHING_READY_PAUSE


class PausedSteps:
    """The paused-step half of `DSparkProposer` (see the module docstring)."""

    def idle_rounds(self) -> int:
        """Rounds still paused: `propose` returns no drafts for that many calls (see `Proposer`).

        When the pause is over but drafting still cannot pay at the last batch size (`_last_batch`)
        (`cannot_pay`), a new pause of `probe_every` rounds is committed here, so an engine with
        asynchronous scheduling need not wait for token ids to hear that nothing will be drafted.
        Under a lease with lean rounds left at the last batch (`DraftingLease`), unless a full
        round's draft priced the bounds since or the bucket is paused: 0 at once."""
        lease = self._lease
        if lease is not None and lease.left > 0 and len(lease.ids) == self._last_batch and self._verdict is None \
                and not self.pauses.left(self._last_batch):
            return 0   # (bounds priced since the lease began, by a full round's draft, are read below)
        if self.decline_features and self._all_gapped(self._last_batch) and not self.pauses.left(self._last_batch):
            self.pauses.pause(self._last_batch, NOTHING_READY_PAUSE)   # as `dormant_rounds` would: nothing can draft
        if self.pauses.left(self._last_batch) == 0 and self._last_batch and not self._probing():
            batch = self._last_batch   # (also in a paused opening: a load ruled out declines its features)
            hopeless, loss = self._bounds(batch)   # (priced during the last draft: `overlap_bookkeeping`)
            hopeless = self.cannot_pay(batch) if hopeless is None else hopeless
            if hopeless and not self._probe_due(batch):
                self._pause_for(self._bound_pause(batch), batch, ruled_out=True)
            elif self.expected_loss(batch) if loss is None else loss:
                self._pause_for(self._bound_pause(batch), batch, ruled_out=True)
            else:
                self._bound_backoff.pop(ledger_bucket(batch), None)
                self._ruled_out.discard(ledger_bucket(batch))
                self._ledger_ruled.discard(ledger_bucket(batch))
                if not hopeless and not self.measure_step_times:   # (measured rates move within a round; with
                    # `measure_round_times` only a sample taken as `propose` starts: a round late, lossless)
                    self._cleared = batch   # judged here: `propose` at this batch need not judge again
        return self._pause

    def wants_features(self) -> bool:
        """Whether the next step must capture the target features (see
        `deepinfer_core.Proposer.wants_features`): False while the last batch's bucket is paused
        because even accepting every draft could not pay there, or after a settled measured loss
        (`decline_features`, `_plan_pause`). A pause run out is judged again here (`idle_rounds`,
        as the engine's next call would). A declined step drops the features buffered so far:
        every request it runs gets a gap, also at a bucket ruled out before (rows buffered
        meanwhile at another bucket, e.g. a new chat batch's prefill, would wait for a flush)."""
        if self.decline_features and self._all_gapped(self._last_batch):   # no running request can use them
            self.declined_steps += 1
            if self.pending.holds:
                self.pending.clear()
            return False
        if (not self._ruled_out or ledger_bucket(self._last_batch) not in self._ruled_out) \
                and not self._rule_out_hopeless(self._last_batch) or self._hopeless_lapsed(self._last_batch):
            return True
        if self.pauses.left(self._last_batch) == 0:   # (an opening's pause does not hold a ruled-out load)
            self.idle_rounds()
        declined = ledger_bucket(self._last_batch) in self._ruled_out and self.pauses.left(self._last_batch) > 0
        self.declined_steps += declined
        if declined and self.pending.holds:   # the running requests get a gap: their rows are useless
            self.pending.clear()   # (else kept until a flush: 44k rows of 256 chat prompts, 58-231 ms)
        if declined and ledger_bucket(self._last_batch) in self._ledger_ruled:
            # a step declined after a measured loss only, not where drafting is ruled out anyway
            if not self.cannot_pay(self._last_batch) and not self.expected_loss(self._last_batch):
                self._ledger_declined += 1
                self._ledger_saved += self._decline_saves(self._last_batch)
        return not declined

    def running(self, num_requests: int) -> None:
        """The next `propose` is asked about fewer requests than run (see `deepinfer_core.Proposer`):
        that round is priced and paused at `num_requests`."""
        self._running = num_requests

    def idle_round(self, num_requests: int) -> None:
        """A paused round without its requests (see `deepinfer_core.Proposer`): what `propose`
        does while paused."""
        self._end_lease()   # (`DraftingLease`: a round without drafts ran)
        self._quiet_left = 0   # (a round asked one by one: no quiet stretch runs)
        self._record(self.rates.start(), num_requests, None)
        self._settle()
        self._last_batch, self._cleared, self._running = num_requests, 0, 0   # (`running` held for one round)
        self._count(PLAIN, num_requests)
        self.acceptance.tick()
        paused_body = False   # a round without drafts (also one at a bucket not paused: the engine
        if num_requests:      # asked by the last batch's bucket, a lag of one round)
            paused_body = self.pauses.skip(num_requests)
            self.skipped_rounds += 1
        self.openings.idle(0 if paused_body else num_requests)   # else an opening's pause, if any

    def dormant_rounds(self, num_requests: int) -> int:
        """Upcoming rounds at `num_requests` requests that are paused with the features declined
        (see `deepinfer_core.Proposer.dormant_rounds`): the pause left at the bucket while it is
        ruled out (`wants_features` would decline them all), else 0. The engine then asks
        nothing for them and reports them with `dormant_passed`. Declining drops the buffered
        features, as `wants_features` does. Never with `measure_step_times` (it times every step)
        nor during a plain re-timing run (`measure_plain_steps`: its steps are asked one by one).
        With `decline_features`, the engine asks before every step without drafts outside a
        stretch, with the requests running then: the last batch (what `wants_features` and
        `idle_rounds` judge) is that one from now on, not the last round's (a batch that just
        ended, or shrank, is not judged). Without it, nothing changes and 0 is returned."""
        self._stretch_asked(num_requests)   # (`measure_plain_steps`: the last stretch's steps timed)
        self._gapped_stretch = False   # (an ask answered 0, e.g. by a wrapper, reports nothing)
        if not self.decline_features:   # (also off with `measure_step_times`: it times every step)
            return 0
        self._last_batch = num_requests   # (also in a plain re-timing run: `wants_features` judges this batch)
        if self._timing_plain():   # its steps are asked one by one, declined or not
            return 0
        if self._all_gapped(num_requests):   # nothing can draft until a request joins: features are useless
            if not self.pauses.left(num_requests):
                self.pauses.pause(num_requests, NOTHING_READY_PAUSE)
            if self.pending.holds:
                self.pending.clear()
            self._gapped_stretch = True   # (`dormant_passed`: its count may include a request that finished)
            return self.pauses.left(num_requests)
        if ledger_bucket(num_requests) not in self._ruled_out and not self._rule_out_hopeless(num_requests):
            return 0
        if self._hopeless_lapsed(num_requests):   # the bound no longer rules it out: its pause keeps the features
            return 0
        if not self.pauses.left(num_requests) and not self.measure_plain_steps:   # its pause ran out: judged
            self.idle_rounds()   # again here, as `wants_features` would before the step (a step asked one by
            if ledger_bucket(num_requests) not in self._ruled_out:   # one saved; not where stretches are timed)
                return 0
        left = self._hopeless_left(num_requests, self.pauses.left(num_requests))
        if left > 0 and self.pending.holds:
            self.pending.clear()
        return left

    def _all_gapped(self, num_requests: int) -> bool:
        """Whether each of the `num_requests` running requests is known to have a gap in its
        context (`ContextFeed.gapped`: requests alive, the running ones and any preempted), so
        none can draft again and features captured now would be dropped: a batch whose steps were
        declined at a load ruled out, found with nothing ready (`propose`) when it was not (session
        20: on the H200 such batches captured features to their end, a sync every 32 rounds).
        A request that joins raises the count past the gapped ones: its features are captured."""
        return 0 < num_requests <= len(self.feed.gapped)

    def dormant_passed(self, num_requests: int, rounds: int) -> None:
        """`rounds` dormant rounds have run, `num_requests` requests running after each: what
        `rounds` calls of `wants_features` (declined) and `idle_round(num_requests)` would have
        recorded (0 requests: the batch ended, nothing skipped), except that the stretch is no
        timed step (`MeasuredRates.pause`: the engine asked nothing during it)."""
        self._end_lease()   # (`DraftingLease`: a round without drafts ran)
        self.rates.pause()   # (the stretch is no step of a timed run)
        gapped, self._gapped_stretch = self._gapped_stretch, False   # declared for gaps (`dormant_rounds`)
        self._stretch_ran(num_requests, rounds)
        self._count(PLAIN, num_requests, rounds)
        self._settle()   # (`LateBookkeeping`: what waits, then the acceptance's round closed)
        self.acceptance.tick(rounds)
        self._last_batch, self._cleared = num_requests, 0
        self.openings.idle(0, rounds)   # (dormant: paused at the bucket itself, not in the opening)
        if num_requests:
            self.pauses.skip(num_requests, rounds)
            self.skipped_rounds += rounds
        self.declined_steps += rounds
        if ledger_bucket(num_requests) in self._ledger_ruled \
                and not self.cannot_pay(num_requests) and not self.expected_loss(num_requests):
            self._ledger_declined += rounds
            self._ledger_saved += rounds * self._decline_saves(num_requests)
        elif self._ledger_declined and num_requests and (gapped or self._all_gapped(num_requests)):   # as `propose`
            self._ledger_saved += rounds * self._decline_saves(num_requests)   # nothing captured nor buffered
            self._regret_gaps(num_requests, 1.0, rounds)   # (a dormant batch is not asked)

    def quiet_rounds(self, num_requests: int) -> int:
        """Upcoming rounds at `num_requests` requests that are paused with the features kept (see
        `deepinfer_core.Proposer` and core's `DormantSteps`): the pause left at the last round's
        bucket when the count has not changed since (a changed count is judged step by step,
        as `idle_rounds` would: a round late), the bucket is not ruled out (those are
        `dormant_rounds`) and every running request can still draft; at most as many rounds as
        the buffer takes without filling (a flush inside the stretch could find gaps that step
        by step would answer with a dormant stretch); else 0. Asking changes nothing. The engine
        then hands over each step's features (`observe_step`: buffered, as paused) and asks
        nothing else until it reports the stretch with `quiet_passed`. Not with
        `measure_step_times` (it times every step) nor during a re-timing run (drafted or plain)."""
        self._stretch_asked(num_requests)
        self._quiet_left = 0
        if (self.measure_step_times or self._probing() or self._timing_plain() or not num_requests
                or num_requests != self._last_batch
                or self._all_gapped(num_requests) or ledger_bucket(num_requests) in self._ruled_out):
            return 0
        left, room = self.pauses.left(num_requests), self.pending.rounds_before_full(num_requests)
        self._quiet_left = left if left <= room else 0   # (`pre_flush`: only a stretch that ends the pause)
        return min(left, room)

    def quiet_passed(self, num_requests: int, rounds: int) -> None:
        """`rounds` quiet rounds have run, `num_requests` requests running after each: what
        `rounds` calls of `idle_round(num_requests)` would have recorded (0 requests: the batch
        ended, nothing skipped), except that the stretch is no timed step (`MeasuredRates.pause`)."""
        self._end_lease()   # (`DraftingLease`: a round without drafts ran)
        self.rates.pause()   # (the stretch is no step of a timed run)
        self._stretch_ran(num_requests, rounds)
        self._count(PLAIN, num_requests, rounds)
        self._settle()   # (`LateBookkeeping`: what waits, then the acceptance's round closed)
        self.acceptance.tick(rounds)
        self._last_batch, self._cleared = num_requests, 0
        body = min(self.pauses.left(num_requests), rounds) if num_requests else 0
        if num_requests:
            self.pauses.skip(num_requests, rounds)
            self.skipped_rounds += rounds
        if body:
            self.openings.idle(0, body)
        if rounds > body:
            self.openings.idle(num_requests, rounds - body)
