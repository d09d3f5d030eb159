# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""PausePolicy: when confidence scheduling drafts, pauses and declines the target features.

The decisions of `DSparkProposer` that judge a load rather than run a round. A mixin: it reads
the proposer's `costs`, `acceptance`, `verify_rates`, `decode`, `num_tokens`, `max_batch`,
`flush_costs`, `decline_features` and `_bound_gain` (`BoundPauses`, with `probe_headroom`), and updates
its `pauses`, `pending` (cleared when features are declined) and the bookkeeping sets `_ruled_out`
and `_ledger_ruled` (`ledger_decline` is turned off by `FeatureKeeping`):

- `cannot_pay` and `expected_loss`: drafting ruled out at a load outright (the profiles; the
  measured acceptance's upper bound);
- `_plan_pause`: a drafted round's expected gain folded into its bucket's average
  (`PauseLedger`), the pause after a loss priced by `DraftCosts.probe_pause`; rounds in the
  replies' openings in a ledger of their own (`OpeningPhase`: paused apart, never declined);
  with `judge_stragglers`, a draining batch's rounds scaled by what its last request keeps of
  their gain (`Stragglers`, also in `expected_loss`), with `run_noise` also by a short run's noise
  (`run_noise.py`);
- `_spread_loss`: a settled loss pauses the larger buckets that cannot gain more;
- `_pause_for`: which buckets decline the target features (`FeatureKeeping`: what keeping them
  costs, and when declining after measured losses stops; `BoundPauses` rules out the loads the
  bounds lose at; `PausedSteps` answers the engine's asks about paused steps with these decisions).

Every decision reads earlier rounds only, never the drafts it governs, so verification stays
lossless. Device-free.
"""

from __future__ import annotations

from deepinfer_dspark.draft_costs import probe_overhead
from deepinfer_dspark.drained_batches import DrainedBatches
from deepinfer_dspark.feature_keeping import FeatureKeeping
from deepinfer_dspark.pause_ledger import buckets_above, ledger_bucket
from deepinfer_dspark.probe_headroom import headroom_scale
from deepinfer_dspark.straggler_judgement import StragglerJudgement

# Rounds' worth of time a drafted run pays besides its rounds: its first step drafts twice, the step
# after its last round only verifies. On an H100 at 8 requests (session 63, run34's traced calls) the
# first step took 6.60 ms against 4.34 inside a run, the verify-only step 3.21 against a plain step's
# ~1.15: ~4.3 ms, one round. Read by `opening_runs` only.
RUN_TRANSITION_ROUNDS = 1.0

MIN_MEASURED_REQUESTS = 16   # drafted requests (per round, decayed; once) before `expected_loss` judges
# (64 until session 17: with a drafter that lost everywhere the evidence never got past 33 requests
# on the H200, and loads of 32-256 requests were probed and kept their features)
NOTHING_READY_PAUSE = 32      # rounds skipped after a round in which no request could draft
SETTLED_ROUNDS = 8            # drafted rounds at a bucket before its losses are priced as settled
SYNC_STEPS = 1.0              # plain steps a probe's next step loses waiting for its tokens (besides the flush)
# Rounds a resumed run is priced over by `resume_bound` (session 77, `sim_engine_calls.py --resume-bound` on an
# H100's profiles, p 0.7-0.9: 32 lifted 8 requests at p 0.75 from 0.964 to 0.978 of plain decoding (24: 0.984) and
# left 2 requests where they were; 8, a young run, stopped drafting at 2 requests where it won 4-13%).
RESUMED_RUN_ROUNDS = 32


class PausePolicy(FeatureKeeping, StragglerJudgement):
    """The load-judging half of `DSparkProposer` (see the module docstring).

    Attributes:
        settled_requests: drafted requests (rounds times the bucket) a bucket's judged rounds must
            also hold before its losses are settled (0: `SETTLED_ROUNDS` rounds alone). Session
            44's candidate, 64: one hard reply at 1 request settled a 300-round pause on the H200
            where fixed-7 ran 1.23-1.31x (BENCHMARKS.md, fortieth session).
        bound_only: up to this many requests, drafted rounds still feed both ledgers' averages
            but pause nothing: drafting stops there only where even the measured acceptance's
            upper bound cannot pay (`expected_loss`, `cannot_pay`: optimism under uncertainty, as
            a UCB bandit). 0 here; 1 by default in the engine's factory (`speculative_config.bound_only`),
            since session 45: on the H200 a lone request's rounds
            priced as they ran (no batch tail), fixed-7's rounds there gained 1.08-1.42 over plain
            steps in all ten processes of sessions 44-45, and the ledgers had paused 300+ rounds
            after one or two hard replies; with 1, the default ran +6 to +17 points at 1 request in
            six processes (BENCHMARKS.md, forty-first session).
        min_replies: `expected_loss` waits until drafted body rounds have been committed for this
            many distinct requests (`AcceptanceRatio.replies`; 0: off, the default). At 1 request
            the evidence's drafted requests are one reply's rounds, correlated: on the H200
            (session 46) one hard first reply's 24 rounds ruled the load out for ~6 replies.
            Session 46's candidate (`confidence-replies4`), not measured on the H200 yet.
        opening_runs: above `bound_only` requests, where the body loses (`_body_loses`: the run
            ends with the opening), an opening round's gain (as `judged` logs it) is scaled by the
            share of the run's time its rounds take (`_opening_run_share`): the transition no round's
            price holds (H100, 8 requests, session 63: ~4.3 ms a run, `RUN_TRANSITION_ROUNDS`; the 3
            opening runs of 5.3 rounds realized 0.87 of plain decoding where the ledger judged
            1.00). False: as until session 63 (`speculative_config.opening_runs`).
        drained: a `DrainedBatches` (or None, the default): while it rules the batch running out
            (its size's drained batches that drafted ran slower than plain decoding's, as measured by
            the undrafted ones or `UNCALIBRATED`), `expected_loss` holds at every load, as a bound's
            would, and what that paused is lifted when the batch ends (`_lift_drained`;
            `speculative_config.drained_batches`).
        young_runs: above `bound_only` requests, a young bucket's losing round (ledger not yet
            `_settled`, no loss inferred there) pauses nothing: the bucket drafts on until it settles,
            paying a resumption once for `SETTLED_ROUNDS` rounds (H100, 8 requests: a lone probe round
            cost its call ~7% in session 66; with it 1.016 (1.000-1.033) of the engine without it in
            session 67). With `settled_requests` a run lasts until that many requests are judged too;
            without a decode profile it changes nothing. False here; True in the engine's factory
            (`speculative_config.young_runs`, `YOUNG_RUNS_DEFAULT`).
        probe_transition: with `_rounds_timed`, a probe's overhead (`_probe_overhead`) also counts
            its run's transition, `RUN_TRANSITION_ROUNDS` rounds' time (session 66 traced a lone probe
            at 8 requests on an H100 at ~9 plain steps, priced at ~2.6; `speculative_config.probe_transition`).
        run_noise, rescale_stragglers: see `StragglerJudgement` (`speculative_config.run_noise`,
            `speculative_config.rescale_stragglers`).
        probe_share_floor: None (the default) or a share in (0, 1]: after the n-th settled loss in a
            row at a bucket (no round there won since), the pause keeps the next probe's loss to
            `DraftCosts.probe_share` / 2^(n-1) of the time, at least this share (`_repeat_share`; a
            floor at or above `probe_share` changes nothing); a partial round's pause takes the share
            the bucket's count gives, counting nothing; as the backoff, the count outlives a drained
            batch's lifted pauses (`_lift_drained`). Session 72's candidate (0.005; a flat
            `probe_share` 0.005 slowed recovery from transient losses fourfold, session 66;
            `speculative_config.probe_share_floor`).
        resume_bound: above `bound_only` requests, `expected_loss`'s bound also pays a resumption: its
            tokens scaled by the share of a `RESUMED_RUN_ROUNDS`-round run's time the rounds take
            (`_resumed_share`). Session 76's simulator put the default's loss at 8 requests in the
            resumptions (capture, sync, flush), not in the rounds. False: as until session 77
            (`speculative_config.resume_bound`).
        probe_headroom: None (off, this class's default) or h > 0: above `bound_only` requests, every
            pause a loss sets is priced at the probes' share times `headroom_scale` of the bounds' gain
            there (`probe_headroom.py`; session 82's candidate; `speculative_config.probe_headroom`,
            whose factory default is 0.5 since session 83).
    """

    settled_requests: int = 0
    bound_only: int = 0
    min_replies: int = 0
    opening_runs: bool = False
    drained: DrainedBatches | None = None
    young_runs: bool = False
    probe_transition: bool = False
    probe_share_floor: float | None = None
    resume_bound: bool = False
    probe_headroom: float | None = None

    def _settled(self, ledger, batch: int) -> bool:
        """Whether `ledger`'s average at `batch`'s bucket is settled: `SETTLED_ROUNDS` judged rounds
        there, holding at least `settled_requests` drafted requests (rounds times the bucket)."""
        rounds = ledger.rounds(batch)
        return rounds >= SETTLED_ROUNDS and rounds * ledger_bucket(batch) >= self.settled_requests

    def cannot_pay(self, batch: int) -> bool:
        """Whether drafting loses to plain decoding at `batch` requests even if every draft were
        accepted (`DraftCosts.loses` with k accepted). False without both profiles. The bound
        depends on the batch size only, so skipping is lossless."""
        return self.costs is not None and self.costs.loses(batch, self.num_tokens)

    def expected_loss(self, batch: int) -> bool:
        """Whether drafting is expected to lose at `batch` requests even with every draft
        verified (`DraftCosts.loses`), with the upper confidence bound of the accepted drafts per
        request measured so far, over all loads (`acceptance.full.upper()`: a request's accepted
        drafts do not depend on the batch it is in). The ledger's gain of such a round is lower
        still, so it is judged a loss without drafting it, and the next `probe_every - 1`
        rounds at its bucket with it. The measurements age (`FullAcceptance`), so the bound widens
        until a load ruled out is drafted again. False without both profiles, before a request of
        a body round (not a reply's opening, `OpeningPhase`) has been drafted, before body rounds of
        `min_replies` distinct requests have been committed, or before the
        evidence has once reached `MIN_MEASURED_REQUESTS` drafted requests (`FullAcceptance.most`:
        once reached, the aging widens the bound, it does not switch the rule off: on the H200 the
        decayed count fell to 54 at 64 requests, and features were kept and flushed there). While
        the engine drains what it holds, the bound's tokens a round are scaled as `_plan_pause`
        scales a round's (`Stragglers.factor`). True at any load while `drained` rules the drained
        batch running out (`DrainedBatches.rules_out`), profiles or not. With `resume_bound`, above
        `bound_only` requests the bound's tokens also pay a resumption (`_resumed_share`)."""
        if self.drained is not None and self.drained.rules_out():
            return True
        if self.costs is None or self.acceptance.full.most < MIN_MEASURED_REQUESTS \
                or not self.acceptance.body_requests or self.acceptance.replies < self.min_replies:
            return False
        upper = self.acceptance.full.upper()
        if upper is None:
            return False
        return self.costs.loses(batch, self._bound_tokens(batch, upper) - 1.0)

    def _bound_tokens(self, batch: int, upper: float) -> float:
        """The tokens a request emits in a full round at `batch` by the bound, each accepting `upper`
        drafts: 1 + `upper`, scaled while a batch drains by `_straggler_factor`, and with
        `resume_bound` above `bound_only` requests by `_resumed_share`. Read by `expected_loss` and
        `BoundPauses._bound_gain`. Re-judged every round, so a run already going is charged a
        resumption it will not pay."""
        tokens = (1.0 + upper) * self._straggler_factor(batch)
        if self.resume_bound and batch > self.bound_only:
            tokens *= self._resumed_share(batch)
        return tokens

    def _resumed_share(self, batch: int) -> float:
        """The share of a resumed run's time its rounds take at `batch` requests (`resume_bound`):
        R s / (R s + O + T s) for a run of R = `RESUMED_RUN_ROUNDS` rounds, s plain steps a round (the
        decode profile's rate over `DraftCosts.round_rate`), O plain steps of a probe's overhead
        without its transition (`_probe_overhead(batch, transition=False)`) and T =
        `RUN_TRANSITION_ROUNDS` rounds of transition. In (0, 1)."""
        round_steps = self.decode.at(batch) / self.costs.round_rate(batch)
        overhead = self._probe_overhead(batch, transition=False) + RUN_TRANSITION_ROUNDS * round_steps
        run = RESUMED_RUN_ROUNDS * round_steps
        return run / (run + overhead)

    def _lift_drained(self) -> None:
        """A batch `drained` ruled out has ended: the pauses, declined features and bound backoffs
        set while it was ruled out (`_pause_for` with `ruled_out`, as `expected_loss` then holds)
        are lifted, so the next batch, ruled out or not, starts as judged afresh (a bound that
        still holds pauses it again at once). Not lifted: the `NOTHING_READY_PAUSE`s its gapped
        requests set at the buckets it drained through (a simulated cost of 0-0.5 points at 4-8
        requests in the session-64 review)."""
        for bucket in self.drained.held:
            self.pauses.pause(bucket, 0)
            self._ruled_out.discard(bucket)
            self._bound_backoff.pop(bucket, None)
            self._hopeless_until.pop(bucket, None)
            self._hopeless_checked.pop(bucket, None)
        self.drained.held.clear()

    def _pause_for(self, rounds: int, batch: int, ruled_out: bool = False) -> None:
        """Pauses `rounds` rounds at `batch`'s bucket; `ruled_out`: because even accepting every
        draft could not pay there, or after a settled measured loss (the target's features are then
        declined: `wants_features`)."""
        self.pauses.pause(batch, rounds)
        bucket = ledger_bucket(batch)
        self._hopeless_until.pop(bucket, None)   # (a new pause supersedes a `_rule_out_hopeless` one)
        if ruled_out and self.drained is not None and self.drained.rules_out():
            self.drained.held.add(bucket)   # (lifted when the batch ends: `_lift_drained`)
        if ruled_out and self.decline_features and rounds > 0:
            if bucket not in self._ruled_out:   # the requests running lose their context for good
                self._ruled_out.add(bucket)
                self.pending.clear()
        else:
            self._ruled_out.discard(bucket)

    def _plan_pause(self, expected: float, lengths: list[int], batch: int, partial: bool = False,
                    opening: bool = False, ids: frozenset | None = None) -> None:
        """Pauses drafting at this batch bucket for the next rounds when drafting does not pay
        there (`PauseLedger`: per bucket, so a pause decided at one load never holds at another).

        Without a decode profile: when the scheduler verified nothing. With one: when the bucket's
        smoothed expected gain, this round's expected emitted tokens per second
        tau * `round_rate(B)` over plain decoding's B * SPS_decode(B) folded into the average of
        earlier rounds, is at most 1, and so is this round's own gain (both the long-run estimate
        and the latest evidence say drafting loses). tau is the batch plus the verified prefixes'
        survivals (`expected`) scaled by `acceptance.ratio(B)` (realized over predicted accepted
        drafts so far), at most the drafts verified. With `short_sps` the round is priced at its
        own verified tokens (`VerifyRates`, as Algorithm 1 chose them) instead of `round_rate(B)`:
        both profiles measured rounds of the same requests. Drafting then pauses for the bucket's
        backoff, which doubles (up to `max_probe_every`), or longer when the round's loss asks
        for it (`DraftCosts.probe_pause`). Once the bucket has judged `SETTLED_ROUNDS` drafted
        rounds, the pause also pays for the next probe's overhead (`probe_overhead`: with the
        defaults at least 100 rounds, 300 at 1 request), the larger buckets that cannot gain more pause as long
        (`_spread_loss`), and the bucket's features are declined while it is paused
        (`decline_features`, `ledger_decline`). So does a bucket whose loss a settled smaller
        bucket implied (`_spread_loss`), from its first losing round, until a round there wins
        (session 21's `sim_engine_calls.py`: at 32 requests, probing as a young bucket once the
        implied pause ran out lost 5-7% with a drafter that wins at 1-2). A younger average (the
        first rounds at a bucket, before the acceptance ratio has settled) pauses for the backoff
        or the round's own loss only, and declines the features (with `decline_features`) only where
        keeping them costs more than drafting could gain there (`_dear_to_keep`; so does a settled
        loss once the regret has stopped `ledger_decline`).
        When the round wins or the average does, the backoff is reset: a round that wins
        while the average loses drafts on, so the average catches up as drafted rounds
        accumulate. A `partial` round (some requests could not draft: a gap in their context) is
        not evidence about the bucket: it is not judged, and when it lost it pauses as long as a
        settled loss would (at least `NOTHING_READY_PAUSE` rounds), backoff untouched, declining
        the features where the bucket's body loses (`_body_loses`, with `ledger_decline`): in a
        closed loop each probe after a settled loss is partial (the requests then running got a
        gap, the joiners have none), and its pause kept the features for ~250 rounds at 8
        requests (`sim_engine_calls.py --closed`: 0.970-0.978 of plain decoding, 0.976-0.986
        declining them). An `opening`
        round (every request in its reply's first `OPENING_TOKENS`) is priced with the openings'
        own acceptance ratio and judged in the openings' ledger instead, against
        `OpeningPhase.worth_skipping` (against 1 where the body will not draft after it:
        `_body_loses`), and a loss there (partial rounds and rounds without a decode
        profile included) pauses openings only: no declined features, no spread (`OpeningPhase`).
        Up to `bound_only` requests a round that is not partial is averaged in its ledger as above
        and pauses nothing.
        """
        verified = sum(lengths)
        ledger = self.openings.ledger if opening else self.pauses   # each phase pauses its own rounds
        if self.decode is None:
            if verified == 0:
                ledger.lost(batch, double=False)
            return
        ratio = self.acceptance.ratio(batch, opening)
        tau = batch + (min(ratio * expected, float(verified)) if expected > 0 else 0.0)
        tokens = tau / batch   # a request's tokens a round, before the straggler's share
        self.judged_straggler = self._judged_straggler(batch, tokens, ids)   # (1.0 unless a batch drains)
        tau *= self.judged_straggler
        self._rescale_ledger(ledger, batch)   # (`rescale_stragglers`)
        rate = None   # the full round's rate, unless the round's own is known (`VerifyRates`)
        if self.verify_rates.short is not None and lengths:
            rate = self.verify_rates.for_batch(len(lengths)).at(len(lengths) + verified)
        gain = self.costs.gain(batch, tau, rate)
        self.judged = (opening, expected, verified, ratio, gain)   # (read by the benchmarks' step log)
        if partial:
            if gain <= 1:   # priced as a probe: the next one pays a flush and a sync too
                rounds = max(NOTHING_READY_PAUSE, self.costs.probe_pause(batch, gain, self._probe_overhead(batch),
                                                                         share=self._repeat_share(ledger, batch)))
                if not opening and self.ledger_decline and self._body_loses(batch):
                    self._pause_for(rounds, batch, ruled_out=True)   # the settled loss still holds
                    self._ledger_ruled.add(ledger_bucket(batch))
                elif not opening and self.decline_features and self._dear_to_keep(batch):
                    self._pause_for(rounds, batch, ruled_out=True)
                else:
                    ledger.pause(batch, rounds)
            return
        if opening:   # judged apart, paused apart: no decline, no spread (`OpeningPhase`)
            if not self._body_loses(batch):   # a paused opening pays a transition into a drafting body
                gain /= self.openings.worth_skipping
            elif self.opening_runs and batch > self.bound_only:   # the run ends with the opening
                gain *= self._opening_run_share(tokens)
                self.judged = (*self.judged[:4], gain)   # (logged as the ledger reads it)
            if ledger.judge(batch, gain) and gain <= 1 and batch > self.bound_only:   # (`bound_only`: averaged only)
                settled = self._settled(ledger, batch)
                at_least = self._settled_pause(ledger, batch, gain) if settled \
                    else self._young_pause(ledger, batch, gain)
                ledger.lost(batch, at_least=at_least, settled=settled)
            else:
                ledger.won(batch)
            return
        bucket = ledger_bucket(batch)
        if self.pauses.judge(batch, gain) and gain <= 1 and batch > self.bound_only:
            settled = self._settled(self.pauses, batch) or bucket in self._inferred   # else short pauses
            if self.young_runs and not settled:
                return   # drafts on until the ledger settles (`young_runs`)
            at_least = self._settled_pause(self.pauses, batch, gain) if settled \
                else self._young_pause(self.pauses, batch, gain)
            rounds = self.pauses.lost(batch, at_least=at_least, settled=settled)
            if settled:
                self._spread_loss(batch, rounds)
            if self.ledger_decline and settled:
                self._pause_for(rounds, batch, ruled_out=True)
                self._ledger_ruled.add(ledger_bucket(batch))
            elif self.decline_features and self._dear_to_keep(batch):   # priced by the flush: not regretted
                self._pause_for(rounds, batch, ruled_out=True)
        else:
            self.pauses.won(batch)
            self._inferred.discard(bucket)

    def _settled_pause(self, ledger, batch: int, gain: float) -> int:
        """The pause after a settled loss of `gain` at `batch` (`DraftCosts.probe_pause`, the next
        probe's overhead included), at `_repeat_share`: a transient loss pauses as before, a
        repeated one ever longer."""
        share = self._repeat_share(ledger, batch)
        return self.costs.probe_pause(batch, gain, self._probe_overhead(batch), share=share)

    def _young_pause(self, ledger, batch: int, gain: float) -> int:
        """The pause after a young loss (`ledger` not settled): the round's own loss at the probes'
        share, no overhead; with `probe_headroom` at `_repeat_share` (the floor's halving too, if set)."""
        share = self._repeat_share(ledger, batch) if self.probe_headroom is not None else None
        return self.costs.probe_pause(batch, gain, 0.0, share=share)

    def _repeat_share(self, ledger, batch: int) -> float | None:
        """With `probe_share_floor`, the share of the time probes may lose at `batch`'s bucket of
        `ledger`: `DraftCosts.probe_share` halved for each settled loss in a row there so far
        (`PauseLedger.repeats`), at least the floor, at most `probe_share`; with `probe_headroom`
        (above `bound_only`) that share times `headroom_scale` of the bounds' gain there; None (the
        costs' own share) without either. Also prices a partial round's pause, which counts no loss."""
        share = None
        if self.probe_share_floor is not None:
            base = self.costs.probe_share
            share = min(base, max(self.probe_share_floor, base / 2 ** min(ledger.repeats(batch), 30)))
        if self.probe_headroom is not None and batch > self.bound_only and self.costs is not None:
            base = self.costs.probe_share if share is None else share
            share = base * headroom_scale(self._bound_gain(batch), self.probe_headroom)
        return share

    def _opening_run_share(self, tokens: float) -> float:
        """The share of an opening run's time its rounds take, a request gaining `tokens` a round:
        R / (R + `RUN_TRANSITION_ROUNDS`), R = the opening's tokens over `tokens` (at least 1), the
        rounds a run over the whole opening takes (an upper bound: a run cut short by a pause pays
        the same transition over fewer rounds)."""
        rounds = max(self.openings.tokens / max(tokens, 1.0), 1.0)
        return rounds / (rounds + RUN_TRANSITION_ROUNDS)

    def _probe_overhead(self, batch: int, transition: bool = True) -> float:
        """Plain steps a probe at `batch` loses besides its round's own loss: `probe_overhead`, or
        with `measure_round_times` (`_rounds_timed`) the larger of it and `SYNC_STEPS` plus the flush
        measured there (`FlushCosts`, at most one round's time: a flush grows with the pause before
        it) plus, with `probe_transition` (and `transition`), `RUN_TRANSITION_ROUNDS` rounds' time at
        the profiles."""
        modelled = probe_overhead(batch)   # (untimed: every decision stays a function of the rounds' tokens)
        transition = transition and self.probe_transition
        flush = self.flush_costs.extra(batch) if self._rounds_timed(batch) else None
        if flush is None and not (transition and self._rounds_timed(batch)):
            return modelled
        plain_rate = self.decode.at(batch)
        round_steps = plain_rate / self.costs.round_rate(batch)
        measured = SYNC_STEPS + (0.0 if flush is None else min(flush * plain_rate, round_steps))
        if transition:
            measured += RUN_TRANSITION_ROUNDS * round_steps
        return max(modelled, measured)

    def _body_loses(self, batch: int) -> bool:
        """Whether the body rounds at `batch`'s bucket have a settled average that loses
        (`SETTLED_ROUNDS` judged, gain at most 1) or were paused by one at a smaller bucket
        (`_inferred`): the body will not draft after the opening, so a paused opening ends
        without the transition `OpeningPhase.worth_skipping` prices."""
        if ledger_bucket(batch) in self._inferred:
            return True
        gain = self._ledger_gain(self.pauses, batch)   # (`rescale_stragglers`: at the factor read now)
        return gain is not None and gain <= 1 and self._settled(self.pauses, batch)

    def _spread_loss(self, batch: int, rounds: int) -> None:
        """A measured loss at `batch` is one at every larger bucket whose gain factor is no larger
        (`DraftCosts.gain_factor`: a request accepts as many drafts in any batch, and they gain
        no more there): those pause at least `rounds` too (and decline their features while
        `ledger_decline`), so a chat batch shrinking through the buckets probes a losing
        load once rather than once per bucket. A bucket whose own settled average wins keeps
        drafting (its rounds' evidence overrules the inference: the profiles are interpolated).
        The buckets paused are marked `_inferred`: their next losing round is priced as settled."""
        factor = self.costs.gain_factor(batch)
        for bucket in buckets_above(batch, self.max_batch):
            own = self._ledger_gain(self.pauses, bucket)   # a settled average of its own that wins overrules
            if own is not None and own > 1 and self._settled(self.pauses, bucket):
                continue
            if self.costs.gain_factor(bucket) <= factor:
                self.pauses.extend(bucket, rounds)
                self._inferred.add(bucket)
                if self.ledger_decline:
                    self._hopeless_until.pop(bucket, None)   # ruled out by the loss, not only by a bound
                    self._ruled_out.add(bucket)   # its requests get a gap when a step is declined
                    self._ledger_ruled.add(bucket)
