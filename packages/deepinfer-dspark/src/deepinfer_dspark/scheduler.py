# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Load-aware prefix scheduling: how many drafts of each request the target verifies.

DSpark (Cheng et al. 2026, "DSpark: Confidence-Scheduled Speculative Decoding with
Semi-Autoregressive Generation", section 3 and Algorithm 1). Request r has prefix survivals
a[r, j] = c[r, 1] * ... * c[r, j] (calibrated per-position confidences: the probability
that drafts 1..j are all accepted) and verifies l_r drafts. The step then processes
B = sum_r (1 + l_r) target tokens and emits tau = sum_r (1 + sum_{j <= l_r} a[r, j])
tokens in expectation; the scheduler maximises Theta = tau * SPS(B).

Greedy admission: rank every candidate (r, j) with a[r, j] > 0 by a descending (ties:
shallower j first, then lower r), start from l = 0, admit candidates in that order while
Theta improves and stop at the first that does not. Since a[r, j] does not increase with j
the ranking lists each request's candidates in prefix order. The admission equals the
closed form a[r, j] > tau * (SPS(B) / SPS(B + 1) - 1).

Losslessness needs the decision to verify draft x_k to depend only on x_<k and on other
requests (c_k is computed from h_k and x_{k-1}, never x_k). With the early stop this holds:
whether (r, k) is admitted depends only on the candidates ranked above it. Scanning all
candidates for the best prefix (`early_stop=False`) lets x_k influence its own admission
through c_{k+1} and biases the output (the paper's Appendix A); it exists only as the
negative control of the tests.

Production variant (DSpark section on DeepSeek-V4 serving): the verify capacity K (total
draft tokens) comes from confidences two steps old, then the top-K live survivals are
verified with no early stop (`StaleCapacityScheduler`). K does not depend on the current
drafts, so the rule stays non-anticipating, and B is known before the step runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

import torch

# sps(batch_tokens: int64 tensor) -> steps per second (float tensor of the same shape).
SPSFn = Callable[[torch.Tensor], torch.Tensor]


class VerifyRate(Protocol):
    """A round's rate by verified tokens: called on a tensor of batch tokens, or `.at(tokens)`
    for one Python int (`SPSProfile`, `verify_rates.RoundRate`)."""

    def __call__(self, batch_tokens: torch.Tensor) -> torch.Tensor: ...

    def at(self, batch_tokens: int) -> float: ...
# Candidates (requests x draft positions) up to which an `sps` with a scalar `at(b)` (an
# `SPSProfile`) is scheduled by `_schedule_small`.
SMALL_SCHEDULE = 64


def prefix_survival(confidences: torch.Tensor) -> torch.Tensor:
    """Prefix survivals a[r, j] = prod_{i <= j} c[r, i].

    Args:
        confidences: [R, gamma] calibrated conditional acceptance probabilities in [0, 1].

    Returns:
        [R, gamma] float64, non-increasing along each row.

    Raises:
        ValueError: not a 2-D tensor, or values outside [0, 1] (field `confidences`).
    """
    if not isinstance(confidences, torch.Tensor) or confidences.dim() != 2:
        raise ValueError("confidences: expected a [R, gamma] tensor")
    c = confidences.detach().to(torch.float64)
    if c.numel() and not bool(((c >= 0) & (c <= 1)).all()):
        raise ValueError("confidences: values must lie in [0, 1]")
    return torch.cumprod(c, dim=1)


def schedule_prefixes(survivals: torch.Tensor, sps: SPSFn, *, early_stop: bool = True) -> torch.Tensor:
    """Paper Algorithm 1: the number of drafts each request verifies this step.

    Args:
        survivals: [R, gamma] prefix survivals in [0, 1], non-increasing along each row
            (see `prefix_survival`); computed from draft tokens x_<k only.
        sps: steps per second at a batch token count (e.g. an `SPSProfile`).
        early_stop: True (production): stop at the first candidate that does not improve
            Theta. False: keep the best prefix of the whole ranking; NOT lossless, kept only
            as the negative control.

    Returns:
        [R] int64 draft counts l_r in [0, gamma].

    Raises:
        ValueError: malformed survivals (field `survivals`).
    """
    if early_stop and callable(getattr(sps, "at", None)) and isinstance(survivals, torch.Tensor) \
            and 0 < survivals.numel() <= SMALL_SCHEDULE:
        return torch.tensor(_schedule_small(survivals, sps.at), dtype=torch.int64)
    a, req, depth = _ranked_candidates(survivals)
    num_req = survivals.shape[0]
    if a.numel() == 0:
        return torch.zeros(num_req, dtype=torch.int64)
    batch = num_req + torch.arange(1, a.numel() + 1, dtype=torch.int64)
    tau = num_req + torch.cumsum(a, 0)
    theta = torch.cat([num_req * _sps(sps, torch.tensor([num_req])), tau * _sps(sps, batch)])
    if early_stop:
        worse = (theta[1:] <= theta[:-1]).nonzero()
        count = int(worse[0, 0]) if worse.numel() else a.numel()
    else:
        count = int(torch.argmax(theta))  # first maximum: ties keep the shorter prefix
    return _lengths(num_req, req[:count], depth[:count])


def _schedule_small(survivals: torch.Tensor, rate: Callable[[int], float]) -> list[int]:
    """`schedule_prefixes` with the early stop, in plain Python: for the few candidates of a
    small batch (the round's decision is on the host's critical path; the tensor version costs
    about 100 small ops whatever the size). Same ranking, same float64 arithmetic in the same
    order (tau = R + the running sum of admitted survivals), so the same lengths; checked
    against it in test_scheduler_properties.py. `rate(b)` = SPS(b), e.g. `SPSProfile.at`."""
    if survivals.dim() != 2:
        raise ValueError("survivals: expected a [R, gamma] tensor")
    return schedule_rows(survivals.detach().to("cpu", torch.float64).tolist(), rate)


def schedule_rows(rows: list[list[float]], rate: Callable[[int], float]) -> list[int]:
    """`schedule_prefixes` with the early stop on survivals given as Python lists (`[R][gamma]`
    floats, as `prefix_survival` would give them): the host path of small rounds, with no tensor
    op at all. Returns the R draft counts; raises ValueError (field `survivals`) on values
    outside [0, 1] or rows that increase."""
    if any(not 0 <= a <= 1 for row in rows for a in row):   # also catches NaN
        raise ValueError("survivals: values must lie in [0, 1]")
    if any(b > a for row in rows for a, b in zip(row, row[1:])):
        raise ValueError("survivals: must be non-increasing along each row (prefix products)")
    return _admit(rows, rate)


def _admit(rows: list[list[float]], rate: Callable[[int], float]) -> list[int]:
    """`schedule_rows` on rows already checked (values in [0, 1], non-increasing)."""
    num_req = len(rows)
    if num_req == 1:   # one row is ranked in its own order: no sort (the host path of 1 request)
        return [_admit_row(rows[0], rate)]
    ranked = sorted((-a, j, r) for r, row in enumerate(rows) for j, a in enumerate(row) if a > 0)
    lengths = [0] * num_req
    best, admitted = num_req * rate(num_req), 0.0
    for count, (neg_a, depth, request) in enumerate(ranked, start=1):
        total = admitted - neg_a
        theta = (num_req + total) * rate(num_req + count)
        if theta <= best:
            break
        best, admitted = theta, total
        lengths[request] = depth + 1
    return lengths


def _admit_row(row: list[float], rate: Callable[[int], float]) -> int:
    """`_admit` of a single request: its candidates in row order (a non-increasing row ranks so:
    ties by depth), the same float64 arithmetic (tau = 1 + the running sum)."""
    best, admitted, count = rate(1), 0.0, 0
    for a in row:
        if a <= 0:   # the rest are 0 too (prefix products)
            break
        total = admitted + a
        theta = (1 + total) * rate(2 + count)
        if theta <= best:
            break
        best, admitted, count = theta, total, count + 1
    return count


def verify_capacity(survivals: torch.Tensor, sps: SPSFn) -> int:
    """Total draft tokens to verify, from (stale) survivals: the best prefix of the ranking.

    Used with survivals of an earlier step, so the full search (no early stop) is allowed:
    the result does not depend on the drafts it will be applied to.

    Args:
        survivals: [R, gamma] prefix survivals of an earlier step.
        sps: steps per second at a batch token count.

    Returns:
        K >= 0, the number of admitted draft tokens.
    """
    return int(schedule_prefixes(survivals, sps, early_stop=False).sum())


def top_k_prefixes(survivals: torch.Tensor, capacity: int) -> torch.Tensor:
    """Verify the `capacity` highest live survivals (ranking of Algorithm 1, no early stop).

    Args:
        survivals: [R, gamma] live prefix survivals.
        capacity: K >= 0 draft tokens (fewer when fewer candidates have a > 0).

    Returns:
        [R] int64 draft counts summing to min(K, number of candidates with a > 0).

    Raises:
        ValueError: malformed survivals or a negative capacity.
    """
    if capacity < 0:
        raise ValueError(f"capacity: must be >= 0, got {capacity}")
    _, req, depth = _ranked_candidates(survivals)
    return _lengths(survivals.shape[0], req[:capacity], depth[:capacity])


class StaleCapacityScheduler:
    """Production scheduling: capacity from survivals `delay` steps old, top-K of live ones.

    The first `delay` steps (no history yet) use Algorithm 1 on live survivals. Rebuild
    (or `reset`) when the set of running requests is replaced wholesale.

    Args:
        sps: steps per second at a batch token count.
        delay: age in steps of the survivals the capacity comes from (>= 1; DSpark uses 2).
    """

    def __init__(self, sps: SPSFn, delay: int = 2):
        if delay < 1:
            raise ValueError(f"delay: must be >= 1, got {delay}")
        self.sps = sps
        self.delay = delay
        self._capacities: deque[int] = deque()

    def schedule(self, survivals: torch.Tensor) -> torch.Tensor:
        """[R] int64 draft counts for this step; records this step's capacity for later."""
        if len(self._capacities) < self.delay:
            lengths = schedule_prefixes(survivals, self.sps)
        else:
            lengths = top_k_prefixes(survivals, self._capacities.popleft())
        self._capacities.append(verify_capacity(survivals, self.sps))
        return lengths

    def reset(self) -> None:
        self._capacities.clear()


def _sps(sps: SPSFn, batch: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(sps(batch), dtype=torch.float64)


def _ranked_candidates(survivals: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Candidates (a, request, depth) with a > 0, in admission order."""
    if not isinstance(survivals, torch.Tensor) or survivals.dim() != 2:
        raise ValueError("survivals: expected a [R, gamma] tensor")
    s = survivals.detach().to("cpu", torch.float64)
    if s.numel() and not bool(((s >= 0) & (s <= 1)).all()):
        raise ValueError("survivals: values must lie in [0, 1]")
    if s.shape[1] > 1 and bool((s[:, 1:] > s[:, :-1]).any()):
        raise ValueError("survivals: must be non-increasing along each row (prefix products)")
    num_req, gamma = s.shape
    # Flattened depth-major, so a stable sort by -a breaks ties by depth, then request.
    a = s.t().reshape(-1)
    req = torch.arange(num_req).repeat(gamma)
    depth = torch.arange(1, gamma + 1).repeat_interleave(num_req)
    keep = a > 0
    a, req, depth = a[keep], req[keep], depth[keep]
    order = torch.sort(a, descending=True, stable=True).indices
    return a[order], req[order], depth[order]


def _lengths(num_req: int, req: torch.Tensor, depth: torch.Tensor) -> torch.Tensor:
    lengths = torch.zeros(num_req, dtype=torch.int64)
    return lengths.scatter_reduce_(0, req, depth, reduce="amax")


def row_survivals(confidences: list[float], room: int) -> list[float]:
    """`prefix_survival` of one request in Python floats (the same float64 products in the same
    order), 0 past its `room` (drafts it may not verify). Raises ValueError (field `confidences`)
    on a value outside [0, 1] within the room (past it values are ignored, as by the tensor path)."""
    if any(not 0 <= c <= 1 for c in confidences[:room]):   # also catches NaN; past the room: ignored
        raise ValueError("confidences: values must lie in [0, 1]")
    out, a = [], 1.0
    for j, c in enumerate(confidences):
        a = a * c if j < room else 0.0
        out.append(a)
    return out


def schedule_round(confidences: Sequence[torch.Tensor] | Sequence[list[float]], rooms: Sequence[int],
                   rate: VerifyRate) -> tuple[list[int], list[float], list[list[float]]]:
    """Algorithm 1 for one drafted round: each request's verified length.

    Args:
        confidences: per request, its `[k]` float draft confidences (any device), or a list of
            floats (one transfer of the whole round's `[R, k]` confidences by the caller, instead
            of one per request: on CUDA each is a sync on the host's critical path).
        rooms: per request, the drafts it may verify (its tokens left, at most k); confidences
            past a request's room are ignored.
        rate: the round's rate by verified tokens (`VerifyRates.for_batch`): `.at(tokens)` for a
            Python int, called as a tensor function by `schedule_prefixes`.

    Returns:
        `(lengths, expected, rows)`: the verified lengths, each request's expected accepted drafts
        over them (the sum of its verified prefix survivals), and each request's prefix survivals
        (floats; 0 past its room).

    Small rounds (at most `SMALL_SCHEDULE` drafts) run in Python (`schedule_rows`: no tensor op on
    the host's critical path), larger ones with tensors (`schedule_prefixes`); both give the same
    lengths."""
    listed = isinstance(confidences[0], list)
    if len(confidences) * (len(confidences[0]) if listed else int(confidences[0].numel())) <= SMALL_SCHEDULE:
        rows = [row_survivals(c if listed else c.tolist(), room) for c, room in zip(confidences, rooms)]
        lengths = _admit(rows, rate.at)   # (row_survivals checked the values: valid prefix products)
        return lengths, [sum(row[:n]) for row, n in zip(rows, lengths)], rows
    conf = (torch.tensor(confidences, dtype=torch.float64) if listed
            else torch.stack(list(confidences)).double().cpu())   # one transfer
    past = torch.tensor(list(rooms))[:, None] <= torch.arange(conf.shape[1])[None, :]
    survival = prefix_survival(conf.masked_fill_(past, 0.0))   # past a request's room: not verifiable
    lengths = schedule_prefixes(survival, rate).tolist()
    verified = torch.tensor(lengths)[:, None] > torch.arange(survival.shape[1])[None, :]
    return lengths, survival.masked_fill(~verified, 0.0).sum(1).tolist(), survival.tolist()
