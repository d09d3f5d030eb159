# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""OpeningPhase: a reply's first tokens are judged apart from the rest of it.

A drafter accepts fewer drafts at the start of a reply than later on. On the H200 (session 19,
`round_trace.py`, SmolLM2-135M-Instruct with a 370 s drafter) fixed-7 accepted 1.21 drafts a
round in a reply's first 32 tokens and 1.91, 2.89 and 2.14 in the next three spans of 32 at 1
request; 1.42 against 1.49-1.89 at 8. Judged together, the openings hid the gain of the rest:
confidence scheduling judged its first 20 rounds (the first reply's opening and a little more)
a loss, paused, declined the features (so the running request could not draft again), and from
then on probed only new replies, at their openings, where drafting loses: it ran at 0.96-0.99x
plain decoding while fixed-7 ran at 1.05-1.08x.

So the rounds of a batch whose requests are all in their first `OPENING_TOKENS` tokens (the
opening phase) are judged in a ledger of their own (`PauseLedger`, per batch bucket), against
`worth_skipping` rather than 1, and a loss there pauses drafting in openings only: the features
are kept (the requests reach the rest of their replies with a whole context), and a paused
opening ends with the batch's opening (when its oldest request passes `OPENING_TOKENS`: a plain
step adds one token to each request). The rest of
the rounds (the body) keep the proposer's main ledger, which alone declines features and
spreads losses to other loads. Device-free.
"""

from __future__ import annotations

from collections.abc import Sequence

from deepinfer_dspark.draft_costs import PROBE_OVERHEAD_STEPS
from deepinfer_dspark.pause_ledger import PauseLedger

OPENING_TOKENS = 32   # a reply's first tokens judged apart (the H200 spans above)


class OpeningPhase:
    """The opening phase's ledger and where the current batch stands in its opening.

    Args:
        probe_every, max_probe_every: as `PauseLedger`.
        tokens: the opening's length in reply tokens (0: no opening phase; every round is body).
    """

    def __init__(self, probe_every: int, max_probe_every: int, tokens: int = OPENING_TOKENS) -> None:
        if tokens < 0:
            raise ValueError(f"opening_tokens: must be >= 0, got {tokens}")
        self.tokens = tokens
        self.ledger = PauseLedger(probe_every, max_probe_every)
        self.current = False   # whether the round being proposed is an opening round
        self.rounds_left = 0   # opening rounds after it, were they all plain steps (0: the body is next)
        self._moved = 0        # the most accepted drafts a request of the last round reported

    def begin(self, steps: Sequence[int]) -> bool:
        """A round of requests whose next tokens are at reply positions `steps` (`DraftRequest.step`);
        returns whether it is an opening round (every request before `tokens`)."""
        oldest = max(steps, default=self.tokens)
        self.current = oldest < self.tokens
        self.rounds_left = max(self.tokens - oldest - 1, 0)
        self._moved = 0
        return self.current

    def skip(self, batch: int) -> bool:
        """Whether the opening round being proposed, of `batch` requests, is skipped (counted as
        `PauseLedger.skip`); False for a body round."""
        return self.current and self.ledger.skip(batch)

    def idle(self, batch: int, rounds: int = 1) -> None:
        """`rounds` rounds without drafts ran (each adds one token to every request): the opening
        ones among them are counted as skipped there (`batch` 0: none)."""
        opening = min(rounds, self.rounds_left)
        if opening and batch:
            self.ledger.skip(batch, opening)
        self.rounds_left -= opening

    def advanced(self, tokens: int) -> None:
        """A request of the last round moved `tokens` more tokens on (its accepted drafts): the
        oldest moved at most the most any request did, so that many fewer opening rounds are left
        (an underestimate only makes the engine ask `propose` sooner; a request that joins with a
        later position is seen at the next `propose`)."""
        extra = tokens - self._moved
        if extra > 0:
            self._moved = tokens
            self.rounds_left = max(self.rounds_left - extra, 0)

    @property
    def worth_skipping(self) -> float:
        """The gain below which skipping an opening pays: its `tokens` plain steps plus the
        transition into the body (`PROBE_OVERHEAD_STEPS`: the flush of the buffered context and a
        sync) against drafting it, tokens / (tokens + overhead)."""
        return self.tokens / (self.tokens + PROBE_OVERHEAD_STEPS) if self.tokens else 1.0

    def paused(self, batch: int) -> int:
        """Upcoming opening rounds still to skip at `batch`'s bucket, at most the opening rounds
        left (0 when the body is next)."""
        return min(self.ledger.left(batch), self.rounds_left)
