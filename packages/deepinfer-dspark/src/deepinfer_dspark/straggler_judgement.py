# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""StragglerJudgement: the share of a drafted round's judged gain a draining batch keeps.

A mixin of `DSparkProposer` (through `PausePolicy`): it reads the proposer's `draining_batch`,
`stragglers` (`Stragglers`), `decode` and `costs`. While the engine drains what it
holds and no request waits, a round's gain is scaled by what the batch's last request to finish
keeps of it (`Stragglers.factor`, with `judge_stragglers`), and with `run_noise` also by what
the slowest request keeps of the run the round starts (`Stragglers.run_factor`, `run_noise.py`),
a run of `RUN_NOISE_ROUNDS`; the smaller factor is taken (the sample's factor already holds the
noise of whole drains: a product would count it twice). With `rescale_stragglers` a ledger's average
is kept at the factor its bucket reads now (`PauseLedger.rescale`). With `judge_frontier` the factor is at
most what the bucket's drafted rounds moved the least advanced request over the mean request
(`Frontier.ratio`). Device-free.
"""

from __future__ import annotations

from deepinfer_dspark.pause_ledger import ledger_bucket

# A run's rounds for `run_noise`: an opening's 32 tokens at ~4 tokens a round (`OPENING_TOKENS`; the H100's
# opening runs at 8 requests, session 70: 4.35) and a lease's rounds (`LEASE_DEFAULT`), one horizon for both.
RUN_NOISE_ROUNDS = 8


class StragglerJudgement:
    """The straggler factors of `PausePolicy`'s judgements.

    Attributes:
        run_noise: scale a draining batch's round by `Stragglers.run_factor` too (False here;
            `speculative_config.run_noise`).
        rescale_stragglers: before a round is judged, and before another decision reads a
            body average (`_ledger_gain`), the ledger's average at the bucket is rescaled to the
            bucket's straggler factor now (`_rescale_ledger`; False here;
            `speculative_config.rescale_stragglers`). Without it the rounds judged before the
            sample existed (factor 1.0) or at another factor keep their old value: on the H100 at 8
            requests (session 70, run34 b, round 6) the openings' average read 1.23 while the
            rounds then judged carried 0.77, and the run's traced rounds, judged 0.82-0.89, drafted
            on (BENCHMARKS.md, sixty-seventh session). With `run_noise` a round carries the smaller
            of the factor and its run's (`_judged_straggler`) while the rescale moves the average
            by the factor alone: an approximation there.
        judge_frontier: the factor is at most `Stragglers.frontier`'s ratio at the bucket (the least
            advanced request's tokens a drafted round over the mean request's, measured; False here;
            `speculative_config.judge_frontier`, session 80's candidate).
    """

    run_noise: bool = False
    rescale_stragglers: bool = False
    judge_frontier: bool = False

    def _straggler_factor(self, batch: int) -> float:
        """What the last request to finish keeps of a round's gain at `batch`'s ledger bucket
        (`Stragglers.factor` at `ledger_bucket(batch)` requests: a drained batch then computes it again
        at ~2 log2(B) sizes, not B) while the engine drains what it holds and no request waits;
        else 1.0. With `judge_frontier`, at most `Frontier.ratio` there once it reads."""
        if not self.draining_batch or self.stragglers.waiting(batch):
            return 1.0
        bucket = ledger_bucket(batch)
        factor = self.stragglers.factor(bucket)
        if self.judge_frontier and self.stragglers.frontier is not None:
            front = self.stragglers.frontier.ratio(bucket, self._rounds_seen())
            if front is not None:
                return min(factor, front)
        return factor

    def _judged_straggler(self, batch: int, tokens: float, ids: frozenset | None) -> float:
        """The straggler factor a round of the requests `ids` judged at `tokens` a request carries:
        `_straggler_factor`, with `run_noise` at most `Stragglers.run_factor` over `RUN_NOISE_ROUNDS`
        (`ids` None: the round's requests are not known, no run noise)."""
        factor = self._straggler_factor(batch)
        if not self.run_noise or ids is None or not self.draining_batch or self.stragglers.waiting(batch):
            return factor
        return min(factor, self.stragglers.run_factor(batch, ids, RUN_NOISE_ROUNDS, tokens))

    def _rescale_ledger(self, ledger, batch: int) -> None:
        """With `rescale_stragglers`, `ledger` (a `PauseLedger`) holds its average at `batch`'s
        bucket at `_straggler_factor(batch)` (1.0 while no batch drains, while requests wait, below
        2 requests or before the sample fills): rounds are judged at the factor read now, so
        earlier rounds count as if they had carried it."""
        if self.rescale_stragglers:
            ledger.rescale(batch, self._straggler_factor(batch))

    def _ledger_gain(self, ledger, batch: int) -> float | None:
        """`ledger.gain(batch)`, with `rescale_stragglers` at the factor read now (`_rescale_ledger`)."""
        self._rescale_ledger(ledger, batch)
        return ledger.gain(batch)

    def _plain_seconds(self, batch: int) -> float:
        """A plain step's seconds at `batch` requests (the decode profile)."""
        return 1.0 / self.decode.at(batch)

    def _round_seconds(self, batch: int) -> float:
        """A drafted round's seconds at `batch` requests (`DraftCosts.round_rate`)."""
        return 1.0 / self.costs.round_rate(batch)
