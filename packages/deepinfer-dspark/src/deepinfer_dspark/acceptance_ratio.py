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
by it. Realized counts come from verifications already done, so every decision
still reads earlier rounds only: lossless. Device-free.
"""

from __future__ import annotations

from deepinfer_dspark.pause_ledger import ledger_bucket

SMOOTH = 1 / 64   # weight of the newest round in the predicted and realized averages


class _Means:
    """Predicted and realized accepted drafts per round, averaged over rounds."""

    def __init__(self) -> None:
        self.predicted = self.realized = 0.0
        self.rounds = 0

    def fold(self, predicted: float, realized: float) -> None:
        self.rounds += 1
        weight = max(SMOOTH, 1.0 / self.rounds)
        self.predicted += weight * (predicted - self.predicted)
        self.realized += weight * (realized - self.realized)

    def ratio(self) -> float | None:
        return self.realized / self.predicted if self.rounds and self.predicted > 0.0 else None


class AcceptanceRatio:
    """Realized over predicted accepted drafts, averaged over rounds, per batch bucket.

    Usage per round: `begin` with the batch size and each drafted request's token count and
    predicted accepted drafts, `commit` as the engine reports each request's tokens after
    verification, and the next round's `begin` (or `close`) folds the round in. Requests that
    finish or leave within the round (no `commit`) count in neither sum.
    """

    def __init__(self) -> None:
        self._open: dict[str, tuple[int, int, float]] = {}   # id -> (tokens before, verified, predicted)
        self._batch = 0
        self._predicted = 0.0    # the open round's sums over committed requests
        self._realized = 0.0
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

    def begin(self, batch: int, rounds: list[tuple[str, int, int, float]]) -> None:
        """Closes the previous round, then opens one of `batch` requests: `(request id, tokens
        before the round (prompt + output), drafts verified, predicted accepted drafts)` per
        drafted request."""
        self.close()
        self._batch = batch
        self._open = {rid: (before, verified, predicted) for rid, before, verified, predicted in rounds
                      if verified > 0}

    def commit(self, request_id: str, num_tokens: int) -> None:
        """The request holds `num_tokens` tokens after this round's verification (prompt +
        output); its accepted drafts are the growth minus the bonus token, within [0, verified]."""
        entry = self._open.pop(request_id, None)
        if entry is None:
            return
        before, verified, predicted = entry
        self._realized += min(max(num_tokens - before - 1, 0), verified)
        self._predicted += predicted

    def close(self) -> None:
        """Folds the open round's committed requests into the averages (no-op without any)."""
        self._open = {}
        if self._predicted <= 0.0 and self._realized <= 0.0:
            return
        self._buckets.setdefault(ledger_bucket(self._batch), _Means()).fold(self._predicted, self._realized)
        self._all.fold(self._predicted, self._realized)
        self._predicted = self._realized = 0.0

    def drop(self, request_id: str) -> None:
        """The request left before its commit: it counts in neither sum."""
        self._open.pop(request_id, None)
