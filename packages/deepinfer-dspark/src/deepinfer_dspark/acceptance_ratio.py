# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""AcceptanceRatio: how many drafts the target really accepts per draft the confidences predict.

The pause policy (`PauseLedger`) weighs each drafted round by its expected emitted tokens, the
sum of the verified prefixes' survival probabilities (paper eq. for E[accepted]). Calibration
(`SequentialTemperatureScaling`) fits the confidences on the training prompts' held-out replies;
on another workload the predicted and the realized acceptance can part. On the H200 (session 10,
BENCHMARKS.md) fixed-7 at 1 request ran at 1.11x plain decoding with 2.8 tokens a round, while
confidence scheduling, deciding from the predictions, paused drafting there.

So the proposer learns the ratio online: for every drafted request it keeps the predicted
accepted count (the survivals summed over its verified prefix) and the realized one (the tokens
the engine committed after verification, minus the bonus token), and the ratio of their sums,
over the last ~`WINDOW` requests and ~`AGE_ROUNDS` engine rounds (decayed sums), shrunk towards
1 (the calibration) by `PRIOR` predicted drafts of pseudo-evidence while the evidence is thin or
stale (`_Means.ratio`), per batch-size bucket (`ledger_bucket`):
Algorithm 1 verifies all confident drafts of a lone request but only the most confident ones of
a large batch, and the calibration error differs between the two. A bucket without a round yet
takes the ratio over all buckets. The ledger then scales each round's predicted accepted count
by it.

Until session 14 the ratio was an upper confidence bound (realized + 2 standard deviations, over
predicted): optimistic, so that drafting went on until the evidence said it lost. But the
evidence at a bucket ages and grows only while drafting runs there, so the bound stayed well
above the realized ratio (an estimate: ~30% for a request accepting 1.6 drafts over ~100 decayed
requests; the realized ratio itself was not logged): on the H200 (BENCHMARKS.md, "eleventh
session") the pause policy weighed confidence's rounds at 1 request at a smoothed gain of 1.10
(bound 1.86) while they emitted 2.3-2.8 tokens in 3.1-3.2 ms against 1.0 ms plain steps (~0.8),
and drafted a quarter of the rounds at a loss. The goal (never below plain decoding) asks for
the realized ratio; probes (`PauseLedger`'s backoff) keep collecting the evidence that resumes
drafting where it wins. The price: where drafting wins, shrinking an unlucky start towards 1
drafts less at first (`sim_pause_policy.py`, BENCHMARKS.md).

It also feeds every drafted request to `full` (`FullAcceptance`): the expected accepted drafts
of a request had all its drafts been verified, which bounds the gain of drafting at any load
before drafting there (see `DSparkProposer.expected_loss`).

Rounds in the replies' openings (`OpeningPhase`) keep ratios of their own: a drafter can be
calibrated differently in a reply's first tokens, and mixed in, the openings' misses priced the
first body rounds (session 19's review). They do feed `full`, since a request's acceptance over
its whole reply is what a load's rounds see; `body_requests` counts the drafted requests of body
rounds, so that `expected_loss` can wait for one (openings alone ruled every load out before a
body was drafted, in the same review).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from deepinfer_dspark.full_acceptance import FullAcceptance
from deepinfer_dspark.pause_ledger import ledger_bucket

WINDOW = 1024     # requests: each one folded in keeps 1 - 1 / WINDOW of the sums before it
AGE_ROUNDS = 512  # engine rounds (drafted or not) over which the sums' weight falls by e
PRIOR = 1.0       # predicted drafts of pseudo-evidence at ratio 1 (the calibration) in every ratio


class _Means:
    """Decayed sums of predicted and realized accepted drafts of the verified prefixes, weights
    decaying per request folded in and per engine round passed."""

    def __init__(self, now: int) -> None:
        self.predicted = self.realized = 0.0
        self.rounds = 0
        self._at = now

    def age(self, now: int) -> None:
        """Applies the decay of the engine rounds since the last call."""
        if now != self._at:
            factor = math.exp(-(now - self._at) / AGE_ROUNDS)
            self.predicted *= factor
            self.realized *= factor
            self._at = now

    def fold(self, predicted: float, realized: float, requests: int) -> None:
        self.rounds += 1
        kept = (1 - 1 / WINDOW) ** requests
        self.predicted = self.predicted * kept + predicted
        self.realized = self.realized * kept + realized

    def ratio(self, prior: float = PRIOR) -> float | None:
        """(R + prior) / (P + prior), R the realized and P the predicted drafts: the realized
        ratio, shrunk towards 1 while the evidence is thin or stale; None before any round."""
        if not self.rounds:
            return None
        return (self.realized + prior) / (self.predicted + prior)


class AcceptanceRatio:
    """Realized over predicted accepted drafts, averaged over rounds, per batch bucket.

    Usage per round: `begin` with the batch size and, per drafted request, its token count, its
    verified drafts and its survival probabilities; `commit` as the engine reports each request's
    tokens after verification; the next round's `begin` (or `close`) folds the round in. A
    request that verified drafts but finishes or leaves within the round (no `commit`) counts
    nowhere; one that verified none counts in `full`'s survival means only.

    Args:
        num_tokens: k, drafts per request per round.
    """

    def __init__(self, num_tokens: int) -> None:
        self._open: dict[str, tuple[int, int, Sequence[float]]] = {}   # id -> (before, verified, survival)
        self._batch = 0
        self._opening = False     # the open round is in the replies' openings
        self._sums = [0.0, 0.0, 0]   # the open round's predicted, realized, requests (committed)
        self._buckets: dict[tuple[int, bool], _Means] = {}   # (bucket, opening) -> means
        self._now = 0             # engine rounds so far
        self._all = {False: _Means(0), True: _Means(0)}       # per phase, over all buckets
        self.full = FullAcceptance(num_tokens)
        self.prior = PRIOR        # predicted drafts of pseudo-evidence at ratio 1 in every ratio
        self.body_requests = 0    # drafted requests committed in body rounds (not decayed)
        self.replies = 0          # distinct requests committed in body rounds (not decayed)
        self._replied: set[str] = set()   # those among them not yet dropped

    @property
    def rounds(self) -> int:
        """Rounds folded in (all buckets, both phases)."""
        return self._all[False].rounds + self._all[True].rounds

    def tick(self, rounds: int = 1) -> None:
        """One engine round (or `rounds`) has passed (drafted or not): the evidence ages."""
        self._now += rounds
        self.full.tick(rounds)

    def ratio(self, batch: int, opening: bool = False) -> float:
        """Realized / predicted accepted drafts at `batch`'s bucket, in the replies' bodies or
        (`opening`) their openings; over all buckets while the bucket has no round there; 1.0
        before any round in that phase."""
        means, overall = self._buckets.get((ledger_bucket(batch), opening)), self._all[opening]
        for m in (means, overall):
            if m is not None:
                m.age(self._now)
        for value in (means.ratio(self.prior) if means else None, overall.ratio(self.prior)):
            if value is not None:
                return value
        return 1.0

    def begin(self, batch: int, rounds: list[tuple[str, int, int, Sequence[float]]], opening: bool = False) -> None:
        """Closes the previous round, then opens one of `batch` requests: `(request id, tokens
        before the round (prompt + output), drafts verified, survival probabilities [k] (0 past
        the request's room))` per drafted request; `opening`: a round in the replies' openings
        (its ratio kept apart)."""
        self.close()
        self._batch, self._opening = batch, opening
        self._open = {}
        for rid, before, verified, survival in rounds:
            if verified > 0:
                self._open[rid] = (before, verified, survival)
            else:   # nothing to verify: no commit comes
                self.full.add(survival, 0, None)

    def commit(self, request_id: str, num_tokens: int) -> int:
        """The request holds `num_tokens` tokens after this round's verification (prompt +
        output); its accepted drafts are the growth minus the bonus token, within [0, verified].
        Returns them (0 for a request not open in this round)."""
        entry = self._open.pop(request_id, None)
        if entry is None:
            return 0
        before, verified, survival = entry
        accepted = min(max(num_tokens - before - 1, 0), verified)
        self._sums[0] += sum(survival[:verified])
        self._sums[1] += accepted
        self._sums[2] += 1
        self.body_requests += not self._opening
        if not self._opening and request_id not in self._replied:
            self._replied.add(request_id)
            self.replies += 1
        self.full.add(survival, verified, accepted)
        return accepted

    def accepted(self, request_id: str, num_tokens: int) -> int:
        """What `commit(request_id, num_tokens)` would return, changing nothing (0 for a request
        not open in this round)."""
        entry = self._open.get(request_id)
        return 0 if entry is None else min(max(num_tokens - entry[0] - 1, 0), entry[1])

    def close(self) -> None:
        """Folds the open round's committed requests into the averages (no-op without any)."""
        self._open = {}
        predicted, realized, requests = self._sums
        if requests == 0:
            return
        key = (ledger_bucket(self._batch), self._opening)
        for means in (self._buckets.setdefault(key, _Means(self._now)), self._all[self._opening]):
            means.age(self._now)
            means.fold(predicted, realized, requests)
        self._sums = [0.0, 0.0, 0]

    def drop(self, request_id: str) -> None:
        """The request left (before its commit: it counts nowhere)."""
        self._open.pop(request_id, None)
        self._replied.discard(request_id)
