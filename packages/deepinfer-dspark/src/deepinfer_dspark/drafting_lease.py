# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DraftingLease: at a load the ledgers do not pause, most rounds skip the judgement.

At 1 request on the H200 (session 50, `engine_host_cost.py`) confidence scheduling verified the
drafts fixed-7 verified, yet its drafted rounds ran +0.16 ms over fixed-7's (5.8%): host work
spread over a dozen calls a round, each of 3-30 us. Up to `bound_only` requests (1 by default)
the pause ledgers pause nothing: a round's judgement (`_plan_pause`) only moves an average there,
and drafting stops only where a bound rules it out (`cannot_pay`, `expected_loss`), priced for
every step after a drafted round.

So, up to `bound_only` requests, once a body round (past the replies' openings, every request
drafted) is judged and leaves its bucket's smoothed gain (`PauseLedger.gain`) above `LEASE_GAIN`
(the bucket's average says drafting wins), its requests hold a lease. The next
`lease_rounds` rounds of exactly those requests run lean. A lean round is drafted, and Algorithm
1 still picks every request's verified prefix from its confidences (`schedule_round`). It is
timed (`MeasuredRates`) where its bucket's rounds are priced at their measured time (not at 1
request by default, `bound_only_untimed`: there a lean round does no timing work, ~5 us a round on
this repository's CPU, session 55), and its evidence is kept: the measured acceptance (`AcceptanceRatio`,
`FullAcceptance`, opened and folded during the next round's draft with `overlap_bookkeeping`)
and the straggler sample. What it skips: its judgement, the bounds, the openings' and the
flushes' bookkeeping. After the lean rounds one round runs the full path (a sample round). Its
judgement, made during the next round's draft (`LateBookkeeping`), renews the lease or ends it.

The evidence must stay whole. In `sim_engine_calls.py` (session 52) lean rounds that fed no
evidence left the bound's measured acceptance at 1.41 drafts a request instead of 1.84. Leases
follow rounds judged well, so the rounds left out were the confident ones. At 8 requests,
after the 1-request batches, the policy then ran 1.068 of plain decoding's speed instead of
1.137 (24 seeds). Sampling the rounds by the calendar alone, with no condition on the gain,
still lost 3-5 points there with thinner evidence.

A lease also ends when:
- the requests change (one finishes or joins, or the engine asks about fewer than run);
- the bucket is paused;
- features wait to be flushed;
- a request cannot draft;
- its lean rounds realized a loss: at the sample round, they emitted no more tokens a round than
  the last judged round's pricing needs to pay (its expected tokens over its own gain). Such a
  lease is not granted again for `lease_rounds` judged rounds.

A rule-out by a bound comes at most a lease later than without it. Every decision still reads
earlier rounds only, so verification stays lossless.

A mixin of `DSparkProposer`: it reads its `judged`, `bound_only`, `pauses`, `pending`, `runner`,
`verify_rates`, `acceptance`, `stragglers`, `rates`, `num_tokens`, `_late` and
`_longest_draftable`. Device-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from deepinfer_core.interfaces import Draft, DraftRequest

from deepinfer_dspark.host_rows import host_rows
from deepinfer_dspark.measured_rates import SPEC
from deepinfer_dspark.scheduler import schedule_round

LEASE_GAIN = 1.0   # the smoothed judged gain over plain decoding above which a load's rounds are leased
# (1.25 at first: an H100 in session 52 judged its rounds at 1 request at 1.11 and leased none; the simulation
# reads the same at 1.25, 1.1 and 1.0)


@dataclass
class Lease:
    """Lean rounds granted to one set of requests (see the module docstring).

    Attributes:
        ids: the requests (the lease holds while exactly these are asked).
        left: lean rounds before the next sample round.
        break_even: tokens a round must emit to pay, by the last judged round's pricing (its
            expected tokens over its gain; `_plan_pause`'s gain is linear in them).
        emitted: tokens the lean rounds emitted, bonus tokens included (from the commits).
        rounds: lean rounds whose commits are counted in `emitted`.
        sampled: its sample round ran (or runs), its judgement not in yet.
    """

    ids: frozenset[str]
    left: int
    break_even: float
    emitted: int = 0
    rounds: int = 0
    sampled: bool = False

    def realized_gain(self) -> float:
        """The lean rounds' emitted tokens a round over `break_even` (inf before a lean round was
        committed)."""
        if not self.rounds:
            return float("inf")
        return self.emitted / (self.rounds * self.break_even)


class DraftingLease:
    """The lean rounds of `DSparkProposer` (see the module docstring).

    Attributes:
        lease_rounds: lean rounds between two sample rounds (0: no lease; every round runs the
            full path).
        leased_rounds: lean rounds run so far (metrics).
    """

    lease_rounds: int = 0
    leased_rounds: int = 0
    _lease: Lease | None = None
    _lean_open: tuple[Lease, dict[str, int]] | None = None   # the last lean round's lease, request -> tokens before
    _lean_begin: tuple | None = None   # a lean round's `AcceptanceRatio.begin` arguments, opened late
    _lease_cooldown = 0   # judged rounds before a lease may be granted again (after a realized loss)

    def _grant_lease(self, plan: tuple) -> None:
        """After `_plan_pause` judged `plan` (`_judge_round`'s tuple, the round's request ids
        last): grants, renews or ends the lease of its requests."""
        if not self.lease_rounds:
            return
        expected, _, batch, partial, opening, ids = plan
        cooling, self._lease_cooldown = self._lease_cooldown > 0, max(self._lease_cooldown - 1, 0)
        judged = self.judged   # (the round's own pricing: its expected tokens)
        gain = None if judged is None or partial or opening else self.pauses.gain(batch)   # (smoothed)
        lease = self._lease
        if gain is None or gain <= LEASE_GAIN or cooling or batch > self.bound_only or len(ids) != batch \
                or self.pauses.left(batch) or self.measure_step_times or self.measure_plain_steps:
            self._lease = None   # (a lean round drafting now still counts its commits: `_lean_open`)
            return
        tokens = batch + (min(judged[3] * expected, float(judged[2])) if expected > 0 else 0.0)
        break_even = tokens / judged[4] if judged[4] > 0 else float("inf")
        if lease is not None and lease.ids == ids:   # renewed: the realized check starts afresh
            lease.left, lease.break_even, lease.emitted, lease.rounds, lease.sampled = \
                self.lease_rounds, break_even, 0, 0, False
        else:
            self._lease = Lease(ids, self.lease_rounds, break_even)

    def _leased(self, requests: list[DraftRequest]) -> Lease | None:
        """The lease this `propose` runs lean under, or None (the full path). Ends a lease that
        no longer holds (see the module docstring). When its lean rounds are spent, this round
        is its sample round (None), unless its lean rounds realized a loss (the lease ends); the
        round after a sample round runs lean while the sample round's judgement waits for it
        (`LateBookkeeping`: made during its draft, it renews the lease or ends it)."""
        lease = self._lease
        if lease is None:
            return None
        batch = len(requests)
        if (self._running or len(lease.ids) != batch or self.pending.holds or self.pauses.left(batch)
                or any(r.request_id not in lease.ids for r in requests)
                or any(self.runner.num_positions(r.request_id) != len(r.token_ids) - 1
                       or len(r.token_ids) > self._longest_draftable for r in requests)):
            self._lease = None
            return None
        if lease.left > 0:
            return lease
        if not lease.sampled:
            lease.sampled = True
            if lease.realized_gain() <= 1.0:   # not renewed until judged rounds fold their evidence
                self._lease_cooldown = self.lease_rounds
                self._lease = None
            return None
        if self._late is None or self._late[0] is None:   # (no judgement waits: a safeguard)
            self._lease = None
            return None
        return lease

    def _lean_round(self, requests: list[DraftRequest], lease: Lease) -> list[Draft]:
        """A leased round: drafted, its verified prefixes picked by `schedule_round`, timed, its
        acceptance evidence kept, not judged; what waits is settled during the draft."""
        batch = len(requests)
        timed = self._timing_read(batch)
        if timed:
            began = self.rates.start()
            self._record(began, batch, None)
        else:
            self.rates.skip()   # (the step before was this bucket's too: its sample would go unread)
        self._last_batch, self._cleared = batch, 0
        self.acceptance.tick()
        settled = []

        def settle() -> None:   # what waits (the sample round's judgement, the last round's evidence)
            settled.append(True)
            self._settle(run_over=False)
        outs = self.runner.draft(self._draft_requests(requests), self.num_tokens, while_running=settle)
        if not settled:   # (the hook did not run)
            settle()
        lease.left = max(lease.left - 1, 0)   # (after the judgement: a renewal counts this round in)
        lengths = [min(r.max_tokens, self.num_tokens) for r in requests]
        tokens = host_rows([o.tokens for o in outs])
        if self.sps is not None and all(o.confidences is not None for o in outs):
            rate = self.verify_rates.for_batch(batch)
            lengths, _, rows = schedule_round(host_rows([o.confidences for o in outs]), lengths, rate)
            begin = (batch, [(r.request_id, len(r.token_ids), n, row) for r, n, row in zip(requests, lengths, rows)])
            if self.overlap_bookkeeping:   # (opened, and its commits folded, during the next round's draft)
                self._late, self._lean_begin = (None, []), begin
            else:
                self.acceptance.begin(*begin)
        if self.judge_stragglers:
            self.stragglers.begin([(r.request_id, len(r.token_ids), r.step, r.max_tokens) for r in requests],
                                  self._rounds_seen())
        self._lean_open = (lease, {r.request_id: len(r.token_ids) for r in requests})
        self.lengths, self._in_run, self._run_ids = lengths, True, lease.ids
        self.drafted_rounds += 1
        self.leased_rounds += 1
        if timed:
            self._record(began, batch, sum(lengths), batch)
        self._count(SPEC, batch)   # (a re-timing run's countdown is every bucket's)
        return [Draft(row[:n], None if out.probs is None else out.probs[:n].float())
                for out, row, n in zip(outs, tokens, lengths)]

    def _lean_commit(self, request_id: str, num_tokens: int) -> bool:
        """A commit of the last lean round's request: counted in its lease (tokens emitted), the
        straggler sample and the measured acceptance; False for any other commit (the full
        path's)."""
        opened = self._lean_open
        if opened is None or request_id not in opened[1]:
            return False
        lease, before = opened[0], opened[1].pop(request_id)
        if not opened[1]:
            self._lean_open = None
        if before < num_tokens <= before + self.num_tokens + 1:
            lease.emitted += num_tokens - before
            lease.rounds += not opened[1]   # (a round counts once all its requests are in)
        if self.judge_stragglers:
            self.stragglers.commit(request_id, num_tokens)
        self._commit_round(request_id, num_tokens)   # (the measured acceptance's evidence)
        return True

    def _open_lean_round(self) -> None:
        """Opens the last lean round in `acceptance` (`AcceptanceRatio.begin`), before its commits
        fold (`LateBookkeeping._settle`, `_forget_commit`)."""
        begin, self._lean_begin = self._lean_begin, None
        if begin is not None:
            self.acceptance.begin(*begin)

    def _end_lease(self) -> None:
        """Ends the lease and forgets the lean round's open commits (a request left, or the
        engine ran a round without asking)."""
        self._lease = None
        self._lean_open = None
