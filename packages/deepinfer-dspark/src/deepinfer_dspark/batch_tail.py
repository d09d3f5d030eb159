# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Tail weights: how much a request's lookup drafts shorten a batch that only drains.

When the engine only drains the requests it holds (`LLM.generate`, which tells the proposer
`draining(True)`) and none waits, the call ends when its last reply does, and a decode step costs
about the same at any batch up to 32 on the H200. Tokens a request gains ahead of the others then
mostly leave its slot idle later: on the H200 (session 30's step log, 8 requests in batch form)
the steps actually saved were 0.32x of the accepted drafts counted as saved (0.63x at 2 requests,
1.02x at 1). So a request counts fully while its output leads the least advanced running
request's by at most `TAIL_SLACK` tokens, and `TAIL_AHEAD` beyond. A server whose clients cap
their concurrency shows no queue either, but it never drains, so its rounds weigh fully
(session 30's review: the weights would cost it 4-5 points at 2-4 requests). `LookupAssist` prices
its rounds with them. DSpark's rounds are not weighted: its drafts go to every request at once,
the one that will finish last included, and `sim_engine_calls.py` (session 32, the H200's 1-8
profiles, acceptance 0.75) put weighted DSpark rounds at 1.146 / 0.976x against 1.161 / 1.059x
unweighted at 2 / 8 requests. The H200 disagreed in session 37 (8 requests in batch form: calls that
drafted 29-42 rounds took 1.17-1.20x plain decoding's time while the ledger read a gain of 1.00; a
closed loop, no tail, ran 1.020x), so `tail_expected` lets a DSpark round be judged by the weights
too, as an option (`speculative_config.tail_rounds`); measured in session 38 it lost (0.924 against
the default's 0.952 at 8 requests, 0.973 against 1.004 at 2), so it stays off. Device-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

TAIL_SLACK = 4        # output tokens a request may lead the least advanced one by and count fully
TAIL_AHEAD = 0.3      # the weight of a request further ahead, in a batch's tail (`lookup_replay.py`:
# slack 2-7 and weights 0.15-0.5 within 0.01 of each other at 2 and 4 requests)


def known_tokens(view: Sequence[int]) -> int:
    """The tokens of a live list before the in-flight step's placeholders (negative ids)."""
    known = len(view)
    while known and view[known - 1] < 0:
        known -= 1
    return known


def tail_weights(views: dict[str, Sequence[int]], prompts: dict[str, int], batch: int,
                 draining: bool) -> dict[str, float]:
    """Request -> the weight of its accepted drafts (1.0 or `TAIL_AHEAD`) when the engine is
    `draining`, `batch` requests run (at least 2) and no tracked request waits (`views`, in
    arrival order, holds at most `batch`); else empty: every request weighs 1. A request's output
    is its known tokens (`known_tokens`) past its `prompts` length."""
    if not draining or len(views) > batch or batch < 2:
        return {}
    outs = {rid: known_tokens(view) - prompts[rid] for rid, view in islice(views.items(), batch)}
    if not outs:
        return {}
    least = min(outs.values())
    return {rid: 1.0 if out <= least + TAIL_SLACK else TAIL_AHEAD for rid, out in outs.items()}


def tail_expected(expected: Sequence[float], weights: Sequence[float]) -> float:
    """A round's expected accepted drafts as a batch's tail counts them: the requests' weighted
    mean times their number, `len * sum(w * e) / sum(w)` (the plain sum when every weight is 1).

    Args:
        expected: each drafted request's expected accepted drafts.
        weights: each one's `tail_weights` weight (1.0 for a request not weighed).

    Raises:
        ValueError: the two differ in length, or a weight is not positive (named).
    """
    if len(expected) != len(weights):
        raise ValueError(f"weights: {len(weights)} for {len(expected)} requests")
    if any(not w > 0 for w in weights):
        raise ValueError(f"weights: must be positive, got {list(weights)[:8]}")
    if all(w == 1.0 for w in weights):
        return float(sum(expected))
    return len(expected) * sum(w * e for w, e in zip(weights, expected)) / sum(weights)
