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
averaged over rounds (the mean over the first 1 / `SMOOTH` rounds, then an exponential moving
average of weight `SMOOTH`, as the ledger's gains), per batch-size bucket (`ledger_bucket`):
Algorithm 1 verifies all confident drafts of a lone request but only the most confident ones of
a large batch, and the calibration error differs between the two. A bucket without a round yet
takes the ratio over all buckets. The ledger then scales each round's predicted accepted count
by it.

It also keeps, over all buckets, the predicted accepted drafts of a request had all its drafts
been verified: scaled by the ratio, the expected accepted drafts per request at full
verification (`full_accepted`), which bounds the gain of drafting at any load before drafting
there (see `DSparkProposer.expected_loss`). Realized counts come from verifications already done, so every decision
still reads earlier rounds only: lossless. Device-free.
"""

from __future__ import annotations

from deepinfer_dspark.pause_ledger import ledger_bucket

SMOOTH = 1 / 64   # weight of the newest round in the averages


class _Means:
    """Per-round sums (predicted and realized accepted drafts of the verified prefixes, predicted
    accepted drafts at full verification, requests), averaged over rounds."""

    def __init__(self) -> None:
        self.predicted = self.realized = self.full = self.requests = 0.0
        self.rounds = 0

    def fold(self, predicted: float, realized: float, full: float, requests: int) -> None:
        self.rounds += 1
        weight = max(SMOOTH, 1.0 / self.rounds)
        self.predicted += weight * (predicted - self.predicted)
        self.realized += weight * (realized - self.realized)
        self.full += weight * (full - self.full)
        self.requests += weight * (requests - self.requests)

    def ratio(self) -> float | None:
        return self.realized / self.predicted if self.rounds and self.predicted > 0.0 else None


class AcceptanceRatio:
    """Realized over predicted accepted drafts, averaged over rounds, per batch bucket.

    Usage per round: `begin` with the batch size and, per drafted request, its token count, its
    verified drafts and predicted accepted drafts (of the verified prefix, and of all its drafts);
    `commit` as the engine reports each request's tokens after verification; the next round's
    `begin` (or `close`) folds the round in. A request that verified drafts but finishes or leaves
    within the round (no `commit`) counts nowhere; one that verified none counts in the
    full-verification average only.
    """

    def __init__(self) -> None:
        self._open: dict[str, tuple[int, int, float, float]] = {}   # id -> (before, verified, predicted, full)
        self._batch = 0
        self._sums = [0.0, 0.0, 0.0, 0]   # the open round's predicted, realized, full, requests
        self._buckets: dict[int, _Means] = {}
        self._all = _Means()

    @property
    def rounds(self) -> int:
        """Rounds folded in (all buckets)."""
        return self._all.rounds

    def ratio(self, batch: int) -> float:
        """Realized / predicted accepted drafts at `batch`'s bucket; over all buckets while the
        bucket has none; 1.0 before any round with a prediction > 0."""
        means = self._buckets.get(ledger_bucket(batch))
        for value in (means.ratio() if means else None, self._all.ratio()):
            if value is not None:
                return value
        return 1.0

    def full_accepted(self) -> float | None:
        """Expected accepted drafts per request with every draft verified: the predicted count at
        full verification, scaled by the ratio over all buckets (None before any round)."""
        ratio = self._all.ratio()
        if ratio is None or self._all.requests <= 0.0:
            return None
        return ratio * self._all.full / self._all.requests

    def begin(self, batch: int, rounds: list[tuple[str, int, int, float, float]]) -> None:
        """Closes the previous round, then opens one of `batch` requests: `(request id, tokens
        before the round (prompt + output), drafts verified, predicted accepted drafts of the
        verified prefix, predicted accepted drafts had all been verified)` per drafted request."""
        self.close()
        self._batch = batch
        self._open = {}
        for rid, before, verified, predicted, full in rounds:
            if verified > 0:
                self._open[rid] = (before, verified, predicted, full)
            else:   # nothing to verify: no commit comes
                self._sums[2] += full
                self._sums[3] += 1

    def commit(self, request_id: str, num_tokens: int) -> None:
        """The request holds `num_tokens` tokens after this round's verification (prompt +
        output); its accepted drafts are the growth minus the bonus token, within [0, verified]."""
        entry = self._open.pop(request_id, None)
        if entry is None:
            return
        before, verified, predicted, full = entry
        self._sums[0] += predicted
        self._sums[1] += min(max(num_tokens - before - 1, 0), verified)
        self._sums[2] += full
        self._sums[3] += 1

    def close(self) -> None:
        """Folds the open round's committed requests into the averages (no-op without any)."""
        self._open = {}
        predicted, realized, full, requests = self._sums
        if requests == 0:
            return
        self._buckets.setdefault(ledger_bucket(self._batch), _Means()).fold(predicted, realized, full, requests)
        self._all.fold(predicted, realized, full, requests)
        self._sums = [0.0, 0.0, 0.0, 0]

    def drop(self, request_id: str) -> None:
        """The request left before its commit: it counts nowhere."""
        self._open.pop(request_id, None)
