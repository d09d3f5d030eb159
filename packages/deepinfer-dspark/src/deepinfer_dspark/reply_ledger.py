# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""ReplyLedger: at 1 request, each reply judged on its own drafted rounds.

At 1 request on the H200 (session 44, `BENCHMARKS.md` fortieth session) nine rounds of one hard
reply, priced at 0.62-1.71x plain decoding, settled bucket 1's average at 0.998. The pause that
followed ran 300-355 rounds (about ten replies) with the target features declined, while fixed-7
ran 1.20-1.48x plain decoding over the same prompts. A round's priced gain swings with the reply,
so the bucket's average mixed one reply's loss into the next replies' judgement.

Where a full round at the measured mean acceptance pays (`PausePolicy._reply_judges`), a loss at
1 request is the reply's, not the load's. This ledger keeps, per request, the average of its
drafted body rounds' priced gains: the plain mean over its first `1 / REPLY_SMOOTH` rounds, then
an exponential moving average of weight `REPLY_SMOOTH`. Once `min_rounds` rounds are judged and
both the average and the latest round are at most 1, the reply loses: it runs plain (prompt lookup
may still draft for it) to its end, and the next reply drafts from its first body round.

Every decision reads earlier rounds only, never the drafts it governs, so verification stays
lossless. Device-free.
"""

from __future__ import annotations

REPLY_SMOOTH = 1 / 8   # weight of a reply's newest round in its average, after its first 8


class ReplyLedger:
    """Per-request averages of drafted rounds' priced gains.

    Args:
        min_rounds: rounds a reply is judged on before its average can settle a loss (>= 1).

    Attributes:
        paused: the request whose loss paused drafting (None: none), ended by `drop`.
        losses: replies paused so far (metrics).

    Raises:
        ValueError: `min_rounds` below 1.
    """

    def __init__(self, min_rounds: int) -> None:
        if min_rounds < 1:
            raise ValueError(f"reply_rounds: must be >= 1, got {min_rounds}")
        self.min_rounds = min_rounds
        self.paused: str | None = None
        self.losses = 0
        self._gain: dict[str, tuple[float, int]] = {}   # request -> (average gain, rounds)

    def judge(self, request_id: str, gain: float) -> bool:
        """Folds one drafted round's priced gain (expected tokens/s over plain decoding's) into
        `request_id`'s average; True when the reply loses: `min_rounds` judged, and both its
        average and `gain` are at most 1."""
        mean, rounds = self._gain.get(request_id, (0.0, 0))
        rounds += 1
        mean += max(REPLY_SMOOTH, 1.0 / rounds) * (gain - mean)
        self._gain[request_id] = (mean, rounds)
        return rounds >= self.min_rounds and mean <= 1.0 and gain <= 1.0

    def pause(self, request_id: str) -> None:
        """`request_id` lost (`judge`): drafting pauses until it finishes (`drop`)."""
        self.paused = request_id
        self.losses += 1

    def gain(self, request_id: str) -> float | None:
        """`request_id`'s average (None before its first judged round)."""
        entry = self._gain.get(request_id)
        return None if entry is None else entry[0]

    def drop(self, request_id: str) -> bool:
        """Forgets a finished request; True when it was the one `paused`."""
        self._gain.pop(request_id, None)
        if self.paused is not None and self.paused == request_id:
            self.paused = None
            return True
        return False
