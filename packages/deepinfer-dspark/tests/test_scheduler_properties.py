# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Prefix scheduler (DSpark Algorithm 1) against brute force, limits, load response, closed form."""

from __future__ import annotations

import itertools

import pytest
import torch

from deepinfer_dspark import (
    SPSProfile,
    StaleCapacityScheduler,
    prefix_survival,
    schedule_prefixes,
    top_k_prefixes,
    verify_capacity,
)


def linear_sps(c0: float, c1: float):
    """Steps per second of a step time t(B) = c0 + c1 * B."""
    return lambda b: 1.0 / (c0 + c1 * b.to(torch.float64))


def theta(survivals: torch.Tensor, lengths: list[int], sps) -> float:
    """Expected emitted tokens times steps per second, computed directly."""
    num_req = survivals.shape[0]
    tau = num_req + sum(float(survivals[r, :lengths[r]].sum()) for r in range(num_req))
    return tau * float(sps(torch.tensor([num_req + sum(lengths)]))[0])


def ranking(survivals: torch.Tensor) -> list[tuple[float, int, int]]:
    """(a, depth, request) of every candidate with a > 0, by a desc, then depth, then request."""
    num_req, gamma = survivals.shape
    cands = [(float(survivals[r, j]), j + 1, r) for r in range(num_req) for j in range(gamma)
             if survivals[r, j] > 0]
    return sorted(cands, key=lambda c: (-c[0], c[1], c[2]))


def random_survivals(g: torch.Generator, num_req: int, gamma: int) -> torch.Tensor:
    conf = torch.rand(num_req, gamma, generator=g, dtype=torch.float64)
    conf[torch.rand(num_req, gamma, generator=g) < 0.1] = 0.0  # some dead prefixes
    return prefix_survival(conf)


def test_matches_brute_force_with_linear_step_time():
    g = torch.Generator().manual_seed(0)
    for trial in range(300):
        num_req, gamma = int(torch.randint(1, 4, (1,), generator=g)), int(torch.randint(1, 4, (1,), generator=g))
        s = random_survivals(g, num_req, gamma)
        sps = linear_sps(1.0, float(torch.rand(1, generator=g)) * 0.6)
        best = max(theta(s, list(ell), sps) for ell in itertools.product(range(gamma + 1), repeat=num_req))
        got = schedule_prefixes(s, sps).tolist()
        assert theta(s, got, sps) == pytest.approx(best, rel=1e-12), (trial, s, got)


def test_flat_sps_verifies_everything_and_steep_sps_nothing():
    s = prefix_survival(torch.rand(5, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 0.9 + 0.05)
    assert schedule_prefixes(s, linear_sps(1.0, 0.0)).tolist() == [4] * 5
    assert schedule_prefixes(s, linear_sps(1.0, 10.0)).tolist() == [0] * 5
    dead = s.clone()
    dead[2, 1:] = 0  # a zero survival is never verified, even for free
    assert schedule_prefixes(dead, linear_sps(1.0, 0.0)).tolist() == [4, 4, 1, 4, 4]


def test_mean_length_shrinks_as_load_rises():
    gamma = 5
    conf = torch.rand(512, gamma, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * 0.5 + 0.5
    sps = linear_sps(1.0, 0.005)
    means = [schedule_prefixes(prefix_survival(conf[:r]), sps).double().mean().item()
             for r in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)]
    assert means[0] == gamma and means[-1] < 1.5, means
    assert all(b <= a for a, b in zip(means, means[1:])), means


def test_admission_matches_closed_form():
    g = torch.Generator().manual_seed(3)
    sizes = list(range(1, 40))
    for trial in range(100):
        num_req, gamma = int(torch.randint(1, 6, (1,), generator=g)), int(torch.randint(1, 6, (1,), generator=g))
        s = random_survivals(g, num_req, gamma)
        times = torch.cumsum(torch.rand(len(sizes), generator=g, dtype=torch.float64) * 0.2, 0) + 1.0
        sps = SPSProfile(sizes, (1.0 / times).tolist())
        lengths = schedule_prefixes(s, sps).tolist()
        admitted = sum(lengths)
        cands = ranking(s)
        tau, batch = float(num_req), num_req
        for i, (a, _, _) in enumerate(cands[: admitted + 1]):
            rate, rate_next = float(sps(torch.tensor([batch]))[0]), float(sps(torch.tensor([batch + 1]))[0])
            assert (a > tau * (rate / rate_next - 1.0)) == (i < admitted), (trial, i)
            tau, batch = tau + a, batch + 1
        # The admitted set is the top `admitted` candidates, a prefix of each request.
        expected = [0] * num_req
        for _, depth, r in cands[:admitted]:
            expected[r] = max(expected[r], depth)
        assert lengths == expected


def test_top_k_prefixes_takes_the_highest_survivals():
    g = torch.Generator().manual_seed(4)
    for _ in range(50):
        s = random_survivals(g, 4, 5)
        cands = ranking(s)
        for capacity in (0, 1, 3, 7, 100):
            lengths = top_k_prefixes(s, capacity).tolist()
            assert sum(lengths) == min(capacity, len(cands))
            assert sum(float(s[r, :lengths[r]].sum()) for r in range(4)) == pytest.approx(
                sum(a for a, _, _ in cands[:capacity]), rel=1e-12)


def test_stale_capacity_scheduler_uses_capacity_two_steps_old():
    g = torch.Generator().manual_seed(5)
    sps = linear_sps(1.0, 0.05)
    steps = [random_survivals(g, 6, 4) for _ in range(5)]
    sched = StaleCapacityScheduler(sps, delay=2)
    out = [sched.schedule(s).tolist() for s in steps]
    assert out[0] == schedule_prefixes(steps[0], sps).tolist()  # warm-up: Algorithm 1
    assert out[1] == schedule_prefixes(steps[1], sps).tolist()
    for t in range(2, 5):
        assert out[t] == top_k_prefixes(steps[t], verify_capacity(steps[t - 2], sps)).tolist()


def test_capacity_is_the_global_best_prefix():
    # With stale survivals the full search is allowed: jagged SPS, the best prefix overall.
    s = torch.tensor([[0.9, 0.8, 0.7]], dtype=torch.float64)
    sps = SPSProfile([1, 2, 3, 4], [1.0, 0.5, 0.49, 0.48])
    assert schedule_prefixes(s, sps).tolist() == [0]  # early stop at the first jump
    assert verify_capacity(s, sps) == 3


@pytest.mark.parametrize(("value", "field"), [
    (torch.tensor([[0.5, 0.6]]), "survivals"),
    (torch.tensor([[1.5, 0.6]]), "survivals"),
    (torch.tensor([0.5]), "survivals"),
])
def test_bad_survivals(value, field):
    with pytest.raises(ValueError, match=field):
        schedule_prefixes(value, linear_sps(1.0, 0.1))


def test_bad_confidences_and_capacity():
    with pytest.raises(ValueError, match="confidences"):
        prefix_survival(torch.tensor([[0.5, -0.1]]))
    with pytest.raises(ValueError, match="capacity"):
        top_k_prefixes(torch.tensor([[0.5]]), -1)
    with pytest.raises(ValueError, match="delay"):
        StaleCapacityScheduler(linear_sps(1.0, 0.1), delay=0)


def test_small_batches_schedule_the_same_in_python() -> None:
    """Small rounds with an `SPSProfile` take the plain-Python path (`_schedule_small`); it must
    return exactly what the tensor path returns (a wrapper without `at` forces that path),
    including ties, dead candidates and errors."""
    import random

    from deepinfer_dspark.scheduler import SMALL_SCHEDULE

    rng = random.Random(3)
    for case in range(300):
        sizes = sorted(rng.sample(range(1, 200), rng.randint(1, 5)))
        profile = SPSProfile(sizes, [rng.uniform(10.0, 1000.0) for _ in sizes])
        rows, gamma = rng.randint(1, 9), rng.randint(1, 7)
        levels = [0.0, 0.25, 0.5, 0.9, 1.0]   # repeated values: ties in the ranking
        conf = torch.tensor([[rng.choice(levels) if case % 2 else rng.random() for _ in range(gamma)]
                             for _ in range(rows)], dtype=torch.float64)
        s = prefix_survival(conf)
        assert s.numel() <= SMALL_SCHEDULE
        fast = schedule_prefixes(s, profile)
        slow = schedule_prefixes(s, lambda b: profile(b))
        assert fast.dtype == slow.dtype == torch.int64 and fast.tolist() == slow.tolist(), (sizes, conf)
    for bad, message in ((torch.tensor([[0.5, 0.9]]), "non-increasing"), (torch.tensor([[1.5]]), r"\[0, 1\]"),
                         (torch.tensor([[float("nan")]]), r"\[0, 1\]")):
        for sps in (SPSProfile([1], [1.0]), lambda b: torch.ones_like(b, dtype=torch.float64)):
            with pytest.raises(ValueError, match=message):
                schedule_prefixes(bad, sps)


def test_schedule_round_matches_the_tensor_path_for_one_and_more_requests() -> None:
    """`schedule_round` (the proposer's host path: one request is admitted in its row's order,
    no sort, no second check) returns the tensor path's lengths and expected accepted drafts,
    with rooms, ties and dead candidates."""
    import random

    from deepinfer_dspark.scheduler import schedule_round

    rng = random.Random(5)
    for case in range(400):
        sizes = sorted(rng.sample(range(1, 64), rng.randint(1, 4)))
        profile = SPSProfile(sizes, [rng.uniform(10.0, 1000.0) for _ in sizes])
        rows, gamma = (1 if case % 3 else rng.randint(2, 8)), rng.randint(1, 7)
        levels = [0.0, 0.3, 0.9, 1.0]
        conf = torch.tensor([[rng.choice(levels) if case % 2 else rng.random() for _ in range(gamma)]
                             for _ in range(rows)], dtype=torch.float32)
        rooms = [rng.randint(0, gamma) for _ in range(rows)]
        lengths, expected, survivals = schedule_round(list(conf), rooms, profile)
        assert schedule_round(conf.tolist(), rooms, profile) == (lengths, expected, survivals)   # as lists
        past = torch.tensor(rooms)[:, None] <= torch.arange(gamma)[None, :]
        s = prefix_survival(conf.double().masked_fill(past, 0.0))
        slow = schedule_prefixes(s, lambda b: profile(b)).tolist()
        assert lengths == slow, (sizes, conf, rooms)
        assert survivals == s.tolist()
        assert expected == [sum(row[:n]) for row, n in zip(s.tolist(), slow)]


def test_large_rounds_take_listed_confidences_too() -> None:
    """Past `SMALL_SCHEDULE` drafts the tensor path runs; confidences handed over as lists (one
    transfer of the round's `[R, k]` by the proposer) give what the row tensors give."""
    import random

    from deepinfer_dspark.scheduler import SMALL_SCHEDULE, schedule_round

    rng = random.Random(9)
    profile = SPSProfile([1, 64, 512], [900.0, 400.0, 60.0])
    rows, gamma = SMALL_SCHEDULE // 4 + 3, 7
    conf = torch.tensor([[rng.random() for _ in range(gamma)] for _ in range(rows)], dtype=torch.float32)
    rooms = [rng.randint(0, gamma) for _ in range(rows)]
    assert rows * gamma > SMALL_SCHEDULE
    assert schedule_round(conf.tolist(), rooms, profile) == schedule_round(list(conf), rooms, profile)


def test_host_rows_take_a_round_in_one_transfer() -> None:
    from deepinfer_dspark.host_rows import host_rows

    tokens = torch.randint(0, 1000, (5, 7))
    assert host_rows(list(tokens)) == tokens.tolist()
    assert host_rows([tokens[0]]) == [tokens[0].tolist()]
    ragged = [torch.tensor([1, 2, 3]), torch.tensor([4])]
    assert host_rows(ragged) == [[1, 2, 3], [4]]
