# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Speculative-decoding metrics, per request and aggregated.

Conventions (DSpark paper and DeepSpec): one verification round of a request proposes
some drafts, verifies l of them, accepts n <= l and emits n + 1 tokens (the correction or
bonus), except when an accepted draft is a stop token (no bonus). The mean accepted length
tau counts the bonus: (accepted + bonus tokens) / rounds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import torch

from deepinfer_dspark.calibration import bin_index

N_BINS = 15


@dataclasses.dataclass
class SpecMetrics:
    """Counters of speculative rounds; add rounds with `record`, combine with `merge`.

    Attributes:
        rounds: verification rounds.
        proposed: draft tokens produced by the proposer.
        verified: draft tokens sent to the target (sum of l).
        accepted: draft tokens accepted (sum of n).
        bonus: correction/bonus tokens emitted.
        verified_at: verified_at[k] = rounds that verified draft k + 1.
        accepted_at: accepted_at[k] = rounds that accepted draft k + 1.
        calib_count, calib_conf, calib_label: N_BINS-bin accumulators of (predicted prefix
            survival, prefix accepted) over verified positions, for the calibration error.
    """

    rounds: int = 0
    proposed: int = 0
    verified: int = 0
    accepted: int = 0
    bonus: int = 0
    verified_at: list[int] = dataclasses.field(default_factory=list)
    accepted_at: list[int] = dataclasses.field(default_factory=list)
    calib_count: list[int] = dataclasses.field(default_factory=lambda: [0] * N_BINS)
    calib_conf: list[float] = dataclasses.field(default_factory=lambda: [0.0] * N_BINS)
    calib_label: list[float] = dataclasses.field(default_factory=lambda: [0.0] * N_BINS)

    def record(self, proposed: int, verified: int, accepted: int,
               survivals: Sequence[float] | None = None, bonus: bool = True) -> None:
        """Adds one round.

        Args:
            proposed: drafts produced (>= verified).
            verified: drafts verified, l.
            accepted: drafts accepted, n <= l.
            survivals: predicted prefix survivals a_1..a_m (m >= l) the scheduler used;
                positions 1..l enter the calibration error.
            bonus: False when the round ended on an accepted stop token (no extra token).

        Raises:
            ValueError: counts out of order (the message names the field).
        """
        if not 0 <= verified <= proposed:
            raise ValueError(f"verified: must be in [0, proposed={proposed}], got {verified}")
        if not 0 <= accepted <= verified:
            raise ValueError(f"accepted: must be in [0, verified={verified}], got {accepted}")
        if survivals is not None and len(survivals) < verified:
            raise ValueError(f"survivals: need >= {verified} values, got {len(survivals)}")
        self.rounds += 1
        self.proposed += proposed
        self.verified += verified
        self.accepted += accepted
        self.bonus += int(bonus)
        _grow(self.verified_at, verified)
        _grow(self.accepted_at, accepted)
        for k in range(verified):
            self.verified_at[k] += 1
        for k in range(accepted):
            self.accepted_at[k] += 1
        if survivals is not None and verified:
            conf = torch.tensor(list(survivals[:verified]), dtype=torch.float64)
            for k, b in enumerate(bin_index(conf, N_BINS).tolist()):
                self.calib_count[b] += 1
                self.calib_conf[b] += float(conf[k])
                self.calib_label[b] += float(k < accepted)

    def merge(self, other: SpecMetrics) -> SpecMetrics:
        """A new SpecMetrics holding the sum of both."""
        out = dataclasses.replace(self, verified_at=list(self.verified_at), accepted_at=list(self.accepted_at),
                                  calib_count=list(self.calib_count), calib_conf=list(self.calib_conf),
                                  calib_label=list(self.calib_label))
        out.rounds += other.rounds
        out.proposed += other.proposed
        out.verified += other.verified
        out.accepted += other.accepted
        out.bonus += other.bonus
        for mine, theirs in ((out.verified_at, other.verified_at), (out.accepted_at, other.accepted_at),
                             (out.calib_count, other.calib_count), (out.calib_conf, other.calib_conf),
                             (out.calib_label, other.calib_label)):
            _grow(mine, len(theirs))
            for k, v in enumerate(theirs):
                mine[k] += v
        return out

    @classmethod
    def aggregate(cls, metrics: Iterable[SpecMetrics]) -> SpecMetrics:
        """Sum over requests."""
        total = cls()
        for m in metrics:
            total = total.merge(m)
        return total

    @property
    def mean_accepted_length(self) -> float:
        """tau = (accepted + bonus) / rounds: tokens emitted per round (0 without rounds)."""
        return (self.accepted + self.bonus) / self.rounds if self.rounds else 0.0

    @property
    def acceptance_rate(self) -> float:
        """accepted / verified (0 when nothing was verified)."""
        return self.accepted / self.verified if self.verified else 0.0

    @property
    def verify_rate(self) -> float:
        """Emitted tokens / (verified drafts + rounds): the useful fraction of target tokens.

        DeepSpec's `verify_rate` (it divides by proposal lengths; it verifies every proposal).
        """
        denom = self.verified + self.rounds
        return (self.accepted + self.bonus) / denom if denom else 0.0

    def acceptance_by_position(self) -> list[float]:
        """Conditional acceptance of draft k + 1 given it was verified, for each k."""
        return [a / v if v else 0.0 for a, v in zip(self.accepted_at, self.verified_at)]

    @property
    def calibration_error(self) -> float:
        """ECE of predicted prefix survivals vs prefix acceptance over verified positions."""
        total = sum(self.calib_count)
        if not total:
            return 0.0
        return sum(abs(c - y) for c, y in zip(self.calib_conf, self.calib_label)) / total


def _grow(values: list, size: int) -> None:
    values.extend([0] * (size - len(values)))
