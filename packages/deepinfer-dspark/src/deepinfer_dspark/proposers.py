# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The engine-facing proposers (`deepinfer_core.interfaces.Proposer`), built by the factories of
`deepinfer_dspark.factories` (entry-point group `deepinfer.proposers`):

- `ngram`: prompt lookup (`deepinfer_dspark.ngram.NgramSpecProposer`), deterministic drafts.
- `dspark`: the DSpark drafter (`DSparkDraftRunner`) with fixed-length or confidence-scheduled
  verification (paper Algorithm 1 with its early stop, over a measured `SPSProfile`).

`speculative_config` keys: see `deepinfer_dspark.factories`.
"""

from __future__ import annotations

import torch
from deepinfer_core.interfaces import Draft, DraftRequest

from deepinfer_dspark.acceptance_ratio import AcceptanceRatio
from deepinfer_dspark.batch_tail import tail_expected
from deepinfer_dspark.bound_pauses import BoundPauses
from deepinfer_dspark.context_feed import ContextFeed
from deepinfer_dspark.draft_costs import DraftCosts
from deepinfer_dspark.draft_runner import DraftRequest as DSparkRequest
from deepinfer_dspark.draft_runner import DraftSampling, DSparkDraftRunner
from deepinfer_dspark.drafting_lease import DraftingLease
from deepinfer_dspark.flush_costs import FlushCosts
from deepinfer_dspark.host_rows import host_rows
from deepinfer_dspark.late_bookkeeping import LateBookkeeping
from deepinfer_dspark.measured_rates import MIN_PERIOD, PLAIN, RETIMED, RUN, SPEC, MeasuredRates
from deepinfer_dspark.observed_features import ObservedFeatures
from deepinfer_dspark.opening_phase import OPENING_TOKENS, OpeningPhase
from deepinfer_dspark.pause_ledger import PauseLedger, ledger_bucket
from deepinfer_dspark.pause_policy import NOTHING_READY_PAUSE, PausePolicy
from deepinfer_dspark.paused_steps import PausedSteps
from deepinfer_dspark.request_hooks import RequestHooks
from deepinfer_dspark.scheduler import schedule_round
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.step_timing import StepTiming
from deepinfer_dspark.stragglers import Stragglers
from deepinfer_dspark.verify_rates import VerifyRates


class DSparkProposer(RequestHooks, ObservedFeatures, PausedSteps, PausePolicy, BoundPauses, StepTiming,
                     LateBookkeeping, DraftingLease):
    """DSpark drafts with fixed-length or confidence-scheduled verification lengths (the
    decisions that judge a load: `PausePolicy`; the per-request hooks: `RequestHooks`).

    Args:
        runner: the drafter with its per-request context caches.
        num_tokens: k, drafts per round (at most the drafter's block size).
        sps: steps-per-second profile of the target on this hardware; with it, each round keeps
            the prefix lengths of `schedule_prefixes` (lossless: the early stop is on); without
            it every request verifies all k drafts (fixed length).
        short_sps: with `sps`, the profile of rounds verifying ONE draft per request (batch
            tokens 2 B); with it Algorithm 1 reads a round's time interpolated in its verified
            tokens between the two measured rounds of B requests (`VerifyRates`).

        probe_every: with `sps`, when the last drafted round verified nothing (the load makes every
            draft unprofitable), skip drafting — its cost is paid even when nothing is verified —
            for up to this many rounds, then draft again to refresh the confidences. The decision
            depends only on earlier rounds' confidences, never on the drafts it governs, so
            verification stays lossless (the same argument as the paper's stale-capacity variant).
        decode: steps-per-second profile of PLAIN decode steps (batch tokens = requests, e.g.
            CUDA-graph replays), when `sps` was measured on speculative steps: while the drafted
            rounds' expected token rate (averaged over rounds, per batch-size bucket) does not
            beat plain decoding, drafting pauses at that bucket, each loss doubling the pause
            (see `_plan_pause` and `PauseLedger`). While paused the drafter's context is not
            projected; the features wait in `pending`. Before drafting, a round is also skipped
            (and the next `probe_every - 1` with it) when even acceptance of every draft could not
            beat plain decoding at the current batch size (`cannot_pay`): no probe is spent then.
            With `measure_step_times`, both comparisons scale the plain side by
            `rates.ratio(B)`: how much slower than the profiles predict the drafted rounds ran,
            relative to the plain steps, in this engine so far (`MeasuredRates`); with
            `measure_round_times`, by the drafted rounds' measured over predicted time alone.
        max_probe_every: the longest backoff, in rounds (a losing probe that cost more may set
            a longer pause: `DraftCosts.probe_pause`).
        max_batch: the engine's largest batch (`max_num_seqs`); default: the decode profile's
            largest measured size.
        defer_context: while paused, keep the observed features in `pending` (True) instead of
            projecting them into the drafter's context every step (False).
        decline_features: while drafting is paused at the current load because even accepting
            every draft could not pay there (`cannot_pay`, `expected_loss`), or after a settled
            measured loss there or below (`_plan_pause`, `_spread_loss`; until a request with a
            gap has cost more at loads where drafting has a settled win than the declines saved:
            `_regret_gaps`), decline the
            target's features (`wants_features`: the target skips them, 1.5-2% of a decode
            step at 8-32 requests and 3-5% at 64-256 on the H200); the requests then running, and those
            admitted while declined, are never drafted again (their context has a gap).
            `expected_loss` judges from the measured acceptance's upper bound, so a judgement later
            reversed still costs those requests their drafting. Never with `measure_step_times`
            (its timing reads every step).
        opening_tokens: rounds whose requests are all within their replies' first this many
            tokens are judged and paused apart (`OpeningPhase`, `openings`); 0: not.
        full_round: with `sps`, Algorithm 1 prices every round of B requests as the full one
            (`VerifyRates`: it then verifies every draft with a chance of acceptance; the pause
            policy alone decides where to draft); not with `short_sps`.
        measure_step_times: with both profiles, time every step into `rates` and use its
            correction (opt-in, see `MeasuredRates`); off, the decisions depend on the profiles
            and the confidences only (the same inputs give the same verification lengths, run
            after run).
        measure_round_times: with both profiles, price every drafted round at its profile's time
            times the rounds' median measured / predicted ratio at its bucket (`MeasuredRates`,
            from `ROUND_SAMPLES` samples; aging toward 1 without fresh ones), plain steps at
            their profile, a losing probe's pause with its measured flush (`FlushCosts`), and a
            young loss declines the features where keeping them is dear (`_dear_to_keep`).
            False here; on by default in the engine's factory; not with `measure_step_times`.
        measure_plain_steps: with both profiles, divide the drafted side's correction by the plain
            steps' measured / predicted time over dormant and quiet stretches (`StepTiming`,
            `MeasuredRates.stretch_asked`; no per-step cost), or in plain re-timing runs where a
            bucket drafts on near break-even (`StepTiming._plain_run_due`). Opt-in; not with
            `measure_step_times`.
        min_gain: the gain over plain decoding a drafted round must exceed above `bound_only`
            requests (`DraftCosts`; 1.0).
        bound_only: up to this many requests the ledgers pause nothing (`PausePolicy.bound_only`;
            0 here, 1 by default in the engine's factory).
        bound_only_untimed: up to `bound_only` requests price the rounds on the profiles even with
            `measure_round_times` (`StepTiming._rounds_timed`); where no pricing reads a bucket's
            step times, its rounds are not timed at all (`StepTiming._timing_read`). False here; True
            by default in the factory.
        overlap_bookkeeping: judge each drafted round, and fold its commits into `acceptance`,
            during the next drafted round's forward on the device, not on the host's critical path
            (`LateBookkeeping`: decisions one round later, still lossless). False here; True by
            default in the engine's factory (`speculative_config.overlap_bookkeeping`).
        judge_stragglers: while the engine drains what it holds (`draining`), scale a round's
            gain by what the batch's last request to finish keeps of it (`Stragglers`). Opt-in
            (False): on the H200 (session 41) it did not beat the mean request's judgement.
        pre_flush: project the buffered features at the last step of a quiet stretch that ends its
            pause (counted from `quiet_rounds`' answer), while the device runs it, instead of in the round that resumes
            drafting (`ObservedFeatures`; `pre_flushes` counts them). False here; True by default in
            the engine's factory (`speculative_config.pre_flush`).

    A request whose next block would pass the drafter's RoPE table (anchor position + block_size
    > `max_position_embeddings`) decodes without drafts from there, as one with a gap does.

    Retirement: with both profiles, when `cannot_pay(B)` holds for every batch size B from 1 to
    `max_batch` (the profiles interpolate between their points and hold their last step time
    beyond them), drafting can never pay on this hardware with this drafter at any load the
    engine can reach, whatever the drafts: `retired` is True and the engine runs without
    speculation (see `deepinfer_core.Proposer`). The decision reads the profiles only, so it is
    lossless.

    Attributes:
        target_layer_ids: the target layers whose outputs the drafter reads.
        lengths: the verification length chosen for each request in the last round (metrics).
        skipped_rounds: rounds in which drafting was skipped (metrics).
        declined_steps: steps whose target features were declined (metrics).
        ledger_decline: whether settled measured losses still decline features (`decline_features`
            until `_regret_gaps` turns it off).
        drafted_rounds: rounds in which the drafter ran (metrics).
        rates: the measured step times (`MeasuredRates`), used with both profiles.
        pauses: the per-bucket pauses, backoffs and expected gains (`PauseLedger`) of the replies'
            bodies; a pause there also holds the openings.
        openings: the same for the replies' openings (`OpeningPhase`).
        acceptance: realized over predicted accepted drafts (`AcceptanceRatio`), which scales the
            predicted accepted count in the pause decisions.
        round_weights: request -> the weight of its expected accepted drafts when the next round
            is judged (`batch_tail.tail_expected`), set before each `propose` by a wrapper that
            knows the batch's tail (`LookupAssist` with `tail_rounds`); empty: each counts once.
    """

    def __init__(self, runner: DSparkDraftRunner, num_tokens: int, sps: SPSProfile | None = None,
                 probe_every: int = 8, decode: SPSProfile | None = None, max_probe_every: int = 256,
                 max_batch: int | None = None, defer_context: bool = True,
                 measure_step_times: bool = False, short_sps: SPSProfile | None = None,
                 decline_features: bool = True, full_round: bool = False,
                 opening_tokens: int = OPENING_TOKENS, measure_round_times: bool = False,
                 measure_plain_steps: bool = False, min_gain: float = 1.0, judge_stragglers: bool = False,
                 bound_only: int = 0, overlap_bookkeeping: bool = False, lease_rounds: int = 0,
                 bound_only_untimed: bool = False, pre_flush: bool = False) -> None:
        block = runner.drafter.config.block_size
        if not 1 <= num_tokens <= block:
            raise ValueError(f"num_speculative_tokens: must be in [1, {block}] (the drafter's block_size), "
                             f"got {num_tokens}")
        self.runner = runner
        self.num_tokens = num_tokens
        self.sps = sps
        self.verify_rates = None if sps is None else VerifyRates(sps, num_tokens, short_sps, full_round)
        self.target_layer_ids = tuple(runner.drafter.config.target_layer_ids)
        # The longest context a block can be drafted after: anchor + block_size within the RoPE table.
        table = getattr(runner.drafter.config, "max_position_embeddings", None)
        self._longest_draftable = float("inf") if table is None else table - block + 1
        self.lengths: list[int] = []
        self.probe_every = probe_every
        self.skipped_rounds = 0
        self.drafted_rounds = 0
        self.declined_steps = 0   # steps whose target features were declined (`wants_features`)
        self.decode = decode
        self.max_probe_every = max(max_probe_every, probe_every)
        self._retime_every = max(self.max_probe_every, MIN_PERIOD)   # rounds between re-timing runs
        self.pauses = PauseLedger(probe_every, self.max_probe_every)   # per batch bucket (the replies' bodies)
        self.openings = OpeningPhase(probe_every, self.max_probe_every, opening_tokens)   # their openings
        self.judged: tuple | None = None   # the last round `_plan_pause` priced: (opening, expected
        # accepted drafts, verified, acceptance ratio, gain before the opening's `worth_skipping`)
        self.judged_straggler = 1.0   # the straggler factor that round's gain carries (read by the step log)
        self._last_batch = 0                 # requests in the last round (or the last `dormant_rounds` ask)
        self._cleared = 0                    # a batch size `idle_rounds` found worth drafting at
        self._running = 0                    # requests running in the coming round, when more than asked
        self.feed = ContextFeed(runner, defer_context)   # features into the drafter's context
        self.pre_flush = pre_flush
        self.pre_flushes = 0
        self._quiet_left = 0     # steps left to observe in the quiet stretch last declared
        self.rates = MeasuredRates()
        self.flush_costs = FlushCosts()   # what a flush adds to a round, for the pause after a probe
        self.acceptance = AcceptanceRatio(num_tokens)  # realized / predicted accepted drafts, from commits
        self.stragglers = Stragglers(self._plain_seconds, self._round_seconds)   # (read with both profiles)
        self.judge_stragglers = judge_stragglers
        if bound_only < 0:
            raise ValueError(f"bound_only: must be >= 0, got {bound_only}")
        self.bound_only = bound_only
        self.bound_only_untimed = bound_only_untimed
        self.overlap_bookkeeping = overlap_bookkeeping
        if lease_rounds < 0:
            raise ValueError(f"lease_rounds: must be >= 0, got {lease_rounds}")
        self.lease_rounds = lease_rounds
        self.draining_batch = False         # the engine only drains what it holds (`draining`)
        for name, on in (("measure_round_times", measure_round_times), ("measure_plain_steps", measure_plain_steps)):
            if on and measure_step_times:
                raise ValueError(f"{name}: cannot be true with measure_step_times (which times every step)")
        self.measure_step_times = measure_step_times
        self.measure_round_times = measure_round_times
        self.measure_plain_steps = measure_plain_steps and decode is not None and sps is not None
        self.decline_features = decline_features and not measure_step_times
        self._ruled_out: set[int] = set()    # buckets whose features are declined while paused
        self.ledger_decline = self.decline_features   # also after measured losses (until regretted)
        self._ledger_ruled: set[int] = set()  # buckets declined after measured losses
        self._ledger_declined = 0             # steps declined there
        self._ledger_saved = 0.0              # plain steps those saved (`_decline_saves`)
        self._gapped_stretch = False          # the dormant stretch running was declared for gaps
        self._gap_cost = 0.0                  # plain steps gapped requests cost at winning loads (`_regret_gaps`)
        self.round_weights: dict[str, float] = {}   # set by a wrapper before `propose` (see the doc)
        self._inferred: set[int] = set()      # buckets whose loss a settled smaller one implied
        self._bound_backoff: dict[int, int] = {}   # bucket -> the next pause a bound's rule-out sets (`_bound_pause`)
        self._hopeless_checked: dict[int, int] = {}   # bucket -> rounds before which a no holds (`_rule_out_hopeless`)
        self._hopeless_until: dict[int, int] = {}     # bucket -> rounds at which its bound is judged again (the same)
        self.retired = False
        self.costs = None if decode is None or sps is None else DraftCosts(num_tokens, sps, decode, self._correction,
                                                                           min_gain, bound_only)
        self.retired_reason = ""
        self.max_batch = max_batch if max_batch is not None else max(decode.batch_tokens) if decode is not None else 1
        if decode is not None and sps is not None:
            largest = self.max_batch
            batch = torch.arange(1, largest + 1, dtype=torch.float64)   # `cannot_pay` for all at once
            tokens = batch * (1 + num_tokens)
            self.retired = bool((tokens * sps(tokens) <= batch * decode(batch)).all())
            if self.retired:
                self.retired_reason = (f"dspark: even accepting all {num_tokens} drafts would not beat plain "
                                       f"decoding at any batch size 1..{largest} (measured profiles)")

    @property
    def batch(self) -> int:
        """Requests in the last round (or running at the last `dormant_rounds` ask)."""
        return self._last_batch

    @property
    def _pause(self) -> int:
        """Rounds still to skip at the last batch's bucket (`_last_batch`: the last round's, or the
        requests running at the last `dormant_rounds` ask; `PauseLedger`), or while the batch is in
        its opening, the opening rounds still to skip there (`OpeningPhase`)."""
        return self.pauses.left(self._last_batch) or self.openings.paused(self._last_batch)

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        self._lean_open = None   # (the engine commits before it proposes)
        self._quiet_left = 0     # (a quiet stretch, if any, is over)
        lease = self._leased(requests) if self._lease is not None else None
        if lease is not None:   # (`DraftingLease`)
            return self._lean_round(requests, lease)
        # The round's batch: the requests running (`running`, when some are not asked: their
        # sampling cannot be drafted for), as `idle_round` and `dormant_rounds` count it, so a
        # pause set here is the one those read (the review of session 28 found the two counts
        # alternating between two buckets: a pause never held).
        batch, self._running = max(len(requests), self._running), 0
        timed = self._timing_read(batch)
        began = self.rates.start() if timed else self.rates.skip()
        if timed:
            self._record(began, batch, None)   # a plain step, unless the drafter runs below
        drafts = [Draft([]) for _ in requests]
        self._last_batch = batch
        judged, self._cleared = self._cleared == batch, 0   # by `idle_rounds`, this round
        if not self.overlap_bookkeeping:   # else settled by the draft below, or at a plain round's end
            self._settle()   # the last drafted round's commits are in
        probing = self._probing()
        self.acceptance.tick()
        opening = self.openings.begin([r.step for r in requests])
        if requests and not probing and self.pauses.skip(batch):
            return self._plain_round(drafts, batch)
        if requests and not probing and not judged and self.expected_loss(batch):
            self._pause_for(self._bound_pause(batch) - 1, batch, ruled_out=True)   # judged without drafting
            return self._plain_round(drafts, batch)
        if requests and not probing and not judged and self.cannot_pay(batch):
            if self._probe_due(batch):   # ruled out by measured times alone: re-time a run of rounds
                self.rates.started(SPEC, batch)
                probing = True
            else:
                self._pause_for(self._bound_pause(batch) - 1, batch, ruled_out=True)   # this round and the next
                return self._plain_round(drafts, batch)
        if requests and not probing and self.openings.skip(batch):   # after the rules above: a load ruled
            return self._plain_round(drafts, batch)                     # out declines features in openings too
        if requests and not probing and self.measure_step_times and self.decode is not None \
                and self.rates.due(SPEC, batch, self._retime_every):   # a lone round is no sample: a run
            self.rates.started(SPEC, batch)
            probing = True
        self._ruled_out.discard(ledger_bucket(batch))   # drafting may pay here: features again
        self._ledger_ruled.discard(ledger_bucket(batch))
        span, flushed, pairs = self.flush_costs.clock(), self.pending.holds, self.pending.pairs   # (`FlushCosts`)
        if flushed:   # also frees steps whose rows belong to finished requests only
            self._flush()
        ready = [i for i, r in enumerate(requests) if self.runner.num_positions(r.request_id) == len(r.token_ids) - 1
                 and len(r.token_ids) <= self._longest_draftable]   # (else its block would pass the RoPE table)
        if len(ready) < len(requests) and self._ledger_declined:
            self._regret_gaps(batch, 1.0 - len(ready) / len(requests))
        if not ready:   # every context has a gap (features declined) or is incomplete: nothing can draft
            # A context short of the committed positions has a gap for good (a recompute may close it):
            # features are declined while every running request has one (`PausePolicy.dormant_rounds`).
            self.feed.gapped.update(r.request_id for r in requests
                                    if self.runner.num_positions(r.request_id) < len(r.token_ids) - 1)
            if requests and not probing:   # a fixed pause (steps overlap), the backoff untouched: a
                self.pauses.pause(batch, NOTHING_READY_PAUSE)   # request with a whole context waits <= 32 rounds
            return self._plain_round(drafts, batch, skipped=False)
        asks = [requests[i] for i in ready]
        self._bound_backoff.pop(ledger_bucket(batch), None)   # it drafts: a bound's next pause starts short
        ids = frozenset(r.request_id for r in asks)
        in_run = self._continues_run(ids)   # (`LateBookkeeping`)
        self.drafted_rounds += 1
        hook = {"while_running": self._overlapped} if self.overlap_bookkeeping else {}   # (`LateBookkeeping`)
        outs = self.runner.draft(self._draft_requests(asks), self.num_tokens, **hook)
        if self._late is not None:   # (the hook did not run: settled before the new round opens)
            self._settle()
        lengths = [min(r.max_tokens, self.num_tokens) for r in asks]
        tokens = host_rows([o.tokens for o in outs])   # one transfer for the round, not one per request
        self.flush_costs.add(batch, span, flushed, pairs)
        if self.sps is not None and all(o.confidences is not None for o in outs):
            rate = self.verify_rates.for_batch(len(outs))   # by verified tokens, for this many drafted
            lengths, expected, rows = schedule_round(host_rows([o.confidences for o in outs]), lengths, rate)
            self.acceptance.begin(batch, [(r.request_id, len(r.token_ids), n, row)
                                          for r, n, row in zip(asks, lengths, rows)], opening)
            # Decided from this round, applied to later rounds only: lossless (stale decisions).
            if not probing:   # the batch's tail weighs the requests (`round_weights`), else each counts once
                expected = tail_expected(expected, [self.round_weights.get(r.request_id, 1.0) for r in asks])
                self._judge_round((expected, lengths, batch, len(asks) < batch, opening, ids), in_run)   # (maybe late)
        if self.judge_stragglers:   # every request asked: lookup drafts may ride along (`LookupAssist`)
            self.stragglers.begin([(r.request_id, len(r.token_ids), r.step, r.max_tokens) for r in asks],
                                  self._rounds_seen())
        self.lengths, self._in_run, self._run_ids = lengths, True, ids
        if timed:
            self._record(began, batch, sum(lengths), len(asks))   # the drafter ran: a drafted round
        self._count(SPEC, batch)   # (also where untimed: it counts down the runs every bucket shares)
        if not probing and (self._plain_run_due(batch) or self.measure_step_times and self.decode is not None
                            and self.rates.due(PLAIN, batch, self._retime_every)):
            self.rates.started(RETIMED if self.measure_plain_steps else PLAIN, batch)
            self._pause_for(max(self.pauses.left(batch), RUN), batch)   # plain steps are timed again too
        for i, out, row, n in zip(ready, outs, tokens, lengths):
            drafts[i] = Draft(row[:n], None if out.probs is None else out.probs[:n].float())
        return drafts

    @staticmethod
    def _draft_requests(asks: list[DraftRequest]) -> list[DSparkRequest]:
        """The drafter's requests of a round: anchored at each request's last token."""
        return [DSparkRequest(r.request_id, int(r.token_ids[-1]), len(r.token_ids) - 1,
                              DraftSampling(r.temperature, r.top_k, r.top_p, r.min_p, r.seed, r.step)) for r in asks]

    def _plain_round(self, drafts: list[Draft], batch: int, skipped: bool = True) -> list[Draft]:
        """Ends a round without drafts: counted as a plain step (and a skipped round), with the
        bookkeeping still waiting settled (`overlap_bookkeeping`)."""
        self.skipped_rounds += skipped
        self._count(PLAIN, batch)
        self._settle()
        return drafts
