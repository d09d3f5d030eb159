# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Scheduler: token budget, chunked prefill, mixed steps, preemption, FCFS, randomized invariants.

Device free: a fake "model" samples token `fake_token(request_id, position)`, so the expected
output of every request is known without running anything, whatever the batching.
"""

from __future__ import annotations

import random

import pytest

from deepinfer_core.engine.kv_cache import BlockPool, KVCacheManager
from deepinfer_core.engine.request import Request, RequestStatus
from deepinfer_core.engine.scheduler import Scheduler, SchedulerConfig, SchedulerOutput
from deepinfer_core.sampling_params import SamplingParams


def fake_token(request_id: str, position: int) -> int:
    return (int(request_id) * 7919 + position * 104729) % 50000 + 3


def make_scheduler(num_blocks: int, block_size: int = 4, budget: int = 64, max_seqs: int = 8,
                   max_model_len: int = 256, chunked: bool = True) -> Scheduler:
    config = SchedulerConfig(max_num_seqs=max_seqs, max_num_batched_tokens=budget, max_model_len=max_model_len,
                             enable_chunked_prefill=chunked)
    return Scheduler(config, KVCacheManager(BlockPool(num_blocks), block_size))


def make_request(rid: int, prompt_len: int, max_tokens: int, eos: int | None = None) -> Request:
    params = SamplingParams(max_tokens=max_tokens, ignore_eos=eos is None)
    prompt = [fake_token(str(rid), -1 - i) for i in range(prompt_len)]
    return Request(str(rid), prompt, params, arrival=rid, eos_token_id=eos)


def run_step(sched: Scheduler) -> tuple[SchedulerOutput, list[Request]]:
    out = sched.schedule()
    sampled = {}
    for req, n in out.scheduled:
        if req.num_computed_tokens + n == req.num_tokens:
            sampled[req.request_id] = [fake_token(req.request_id, req.num_output_tokens)]
    return out, sched.update_from_output(out, sampled)


def check_invariants(sched: Scheduler, out: SchedulerOutput) -> None:
    cfg, kv = sched.config, sched.kv
    assert out.num_batched_tokens == sum(n for _, n in out.scheduled) <= cfg.max_num_batched_tokens
    assert all(n > 0 for _, n in out.scheduled)
    assert len(sched.running) <= cfg.max_num_seqs
    ids = [r.request_id for r, _ in out.scheduled]
    assert len(ids) == len(set(ids)), "a request scheduled twice in one step"
    live = list(sched.waiting) + sched.running
    assert len({r.request_id for r in live}) == len(live), "a request is both waiting and running"
    assert [r.arrival for r in sched.waiting] == sorted(r.arrival for r in sched.waiting)
    assert [r.arrival for r in sched.running] == sorted(r.arrival for r in sched.running)
    tables = [b for r in live for b in r.block_ids]
    assert len(tables) == len(set(tables)), "a block is in two tables without sharing"
    assert kv.pool.num_blocks - kv.num_free_blocks == len(tables)
    assert all(kv.pool.ref_count(b) == 1 for b in tables)
    for r in sched.waiting:
        assert r.block_ids == [] and r.num_computed_tokens == 0
    for r in sched.running:
        assert r.num_computed_tokens <= r.num_tokens
        assert len(r.block_ids) * kv.block_size >= r.num_computed_tokens


def test_chunked_prefill_splits_under_budget_and_samples_at_the_end() -> None:
    sched = make_scheduler(num_blocks=64, budget=32)
    req = make_request(1, prompt_len=100, max_tokens=2)
    sched.add_request(req)
    chunks = []
    while True:
        out, finished = run_step(sched)
        check_invariants(sched, out)
        chunks.append(out.scheduled[0][1])
        if req.num_output_tokens:
            break
    assert chunks == [32, 32, 32, 4]
    assert req.output_token_ids == [fake_token("1", 0)]  # sampled only when the chunk reached the end


def test_decode_and_prefill_share_a_step() -> None:
    sched = make_scheduler(num_blocks=64, budget=16)
    a = make_request(1, prompt_len=10, max_tokens=8)
    sched.add_request(a)
    run_step(sched)  # a prefilled whole, first token sampled
    b = make_request(2, prompt_len=40, max_tokens=2)
    sched.add_request(b)
    out, _ = run_step(sched)
    assert [(r.request_id, n) for r, n in out.scheduled] == [("1", 1), ("2", 15)]
    out, _ = run_step(sched)
    assert [(r.request_id, n) for r, n in out.scheduled] == [("1", 1), ("2", 15)]


def test_without_chunked_prefill_a_prompt_waits_for_a_whole_budget() -> None:
    sched = make_scheduler(num_blocks=64, budget=50, max_model_len=50, chunked=False)
    a, b = make_request(1, 30, max_tokens=3), make_request(2, 30, max_tokens=3)
    sched.add_request(a)
    sched.add_request(b)
    out, _ = run_step(sched)
    assert [(r.request_id, n) for r, n in out.scheduled] == [("1", 30)]  # 30 + 30 > 50
    out, _ = run_step(sched)
    assert [(r.request_id, n) for r, n in out.scheduled] == [("1", 1), ("2", 30)]
    with pytest.raises(ValueError, match="max_num_batched_tokens"):
        SchedulerConfig(max_num_seqs=1, max_num_batched_tokens=10, max_model_len=20, enable_chunked_prefill=False)


def test_max_num_seqs_caps_running_requests() -> None:
    sched = make_scheduler(num_blocks=64, budget=64, max_seqs=2)
    for rid in range(1, 5):
        sched.add_request(make_request(rid, 4, max_tokens=3))
    out, _ = run_step(sched)
    assert [r.request_id for r, _ in out.scheduled] == ["1", "2"]
    assert [r.request_id for r in sched.waiting] == ["3", "4"]


def test_preemption_picks_the_latest_arrival_and_keeps_its_fcfs_place() -> None:
    # 6 blocks of 4 tokens; three 8-token prompts grow until the pool runs dry.
    sched = make_scheduler(num_blocks=6, block_size=4, budget=64, max_model_len=24)
    for rid in (1, 2, 3):
        sched.add_request(make_request(rid, 8, max_tokens=10))
    run_step(sched)
    sched.add_request(make_request(4, 4, max_tokens=2))  # arrives after the three
    for _ in range(20):
        out, _ = run_step(sched)
        check_invariants(sched, out)
        if out.preempted:
            break
    assert [r.request_id for r in out.preempted] == ["3"]
    victim = out.preempted[0]
    assert victim.status == RequestStatus.PREEMPTED and victim.num_computed_tokens == 0
    assert victim.num_output_tokens > 0  # emitted tokens are kept for the recompute
    assert [r.request_id for r in sched.waiting] == ["3", "4"]
    assert sched.num_preemptions == 1


def test_preempted_request_is_readmitted_with_its_tokens() -> None:
    sched = make_scheduler(num_blocks=6, block_size=4, budget=64, max_model_len=24)
    reqs = [make_request(rid, 8, max_tokens=10) for rid in (1, 2, 3)]
    for r in reqs:
        sched.add_request(r)
    recompute_chunks = []
    while sched.has_unfinished():
        victims_before = {r.request_id for r in sched.waiting if r.status == RequestStatus.PREEMPTED}
        out, _ = run_step(sched)
        check_invariants(sched, out)
        for r, n in out.scheduled:
            if r.request_id in victims_before:
                recompute_chunks.append((n, r.num_prompt_tokens + r.num_output_tokens - 1))
    assert sched.num_preemptions >= 1
    # A readmitted request recomputes its prompt plus every token it had emitted.
    assert recompute_chunks and all(n == expect for n, expect in recompute_chunks)
    for r in reqs:
        assert r.status == RequestStatus.FINISHED_LENGTH
        assert r.output_token_ids == [fake_token(r.request_id, i) for i in range(10)]


def test_eos_and_stop_tokens_finish_requests() -> None:
    sched = make_scheduler(num_blocks=64)
    eos = fake_token("1", 2)
    a = make_request(1, 4, max_tokens=10, eos=eos)
    b = Request("2", [5, 6], SamplingParams(max_tokens=10, stop_token_ids=[fake_token("2", 1)]), arrival=2,
                eos_token_id=None)
    c = Request("3", [5, 6], SamplingParams(max_tokens=10, min_tokens=3), arrival=3,
                eos_token_id=fake_token("3", 1))
    for r in (a, b, c):
        sched.add_request(r)
    finished = []
    while sched.has_unfinished():
        finished += run_step(sched)[1]
    assert (a.status, a.num_output_tokens, a.stop_reason) == (RequestStatus.FINISHED_STOPPED, 3, None)
    assert (b.status, b.num_output_tokens, b.stop_reason) == (RequestStatus.FINISHED_STOPPED, 2, fake_token("2", 1))
    # EOS before min_tokens does not stop (the sampler also bans it; here the fake model ignores that).
    assert (c.status, c.num_output_tokens) == (RequestStatus.FINISHED_LENGTH, 10)
    assert sorted(r.request_id for r in finished) == ["1", "2", "3"]
    assert sched.kv.num_free_blocks == sched.kv.pool.num_blocks


def test_max_model_len_caps_output_and_long_prompt_is_rejected() -> None:
    sched = make_scheduler(num_blocks=64, max_model_len=12)
    req = make_request(1, 10, max_tokens=100)
    sched.add_request(req)
    while sched.has_unfinished():
        run_step(sched)
    assert req.num_tokens == 12 and req.status == RequestStatus.FINISHED_LENGTH
    with pytest.raises(ValueError, match="prompt is 13 tokens, longer than max_model_len"):
        sched.add_request(make_request(2, 13, max_tokens=1))
    sched.add_request(make_request(3, 2, 1))
    with pytest.raises(ValueError, match="request_id"):
        sched.add_request(make_request(3, 2, 1))


def test_abort_frees_waiting_and_running_requests() -> None:
    sched = make_scheduler(num_blocks=64, max_seqs=1)
    a, b = make_request(1, 8, max_tokens=5), make_request(2, 8, max_tokens=5)
    sched.add_request(a)
    sched.add_request(b)
    run_step(sched)
    assert sched.abort("1") is a and a.status == RequestStatus.FINISHED_ABORTED
    assert sched.abort("2") is b and b.status == RequestStatus.FINISHED_ABORTED
    assert sched.abort("2") is None
    assert not sched.has_unfinished() and sched.kv.num_free_blocks == 64


@pytest.mark.parametrize("seed", range(16))
def test_randomized_simulation_invariants(seed: int) -> None:
    rng = random.Random(seed)
    block_size = rng.choice([1, 2, 4, 16])
    max_model_len = rng.randint(8, 64)
    # Enough blocks for one request at max_model_len (the engine guarantees this), often few more.
    min_blocks = -(-max_model_len // block_size)
    num_blocks = min_blocks + rng.randint(0, min_blocks)
    chunked = rng.random() < 0.8
    budget = rng.randint(1, 80) if chunked else rng.randint(max_model_len, 2 * max_model_len)
    sched = make_scheduler(num_blocks, block_size, budget, rng.randint(1, 6), max_model_len, chunked)
    pending = []
    for rid in range(1, rng.randint(5, 25)):
        prompt_len = rng.randint(1, max_model_len - 1)
        pending.append(make_request(rid, prompt_len, max_tokens=rng.randint(1, max_model_len - prompt_len)))
    all_reqs = list(pending)
    first_scheduled: list[int] = []
    finished: list[Request] = []
    for _ in range(20000):
        if pending and rng.random() < 0.3:
            sched.add_request(pending.pop(0))
        if not sched.has_unfinished() and not pending:
            break
        out, done = run_step(sched)
        check_invariants(sched, out)
        finished += done
        for r, _ in out.scheduled:
            if r.arrival not in first_scheduled:
                first_scheduled.append(r.arrival)
    assert not pending and not sched.has_unfinished(), "the simulation did not drain"
    assert sorted(r.request_id for r in finished) == sorted(r.request_id for r in all_reqs)  # none lost or twice
    assert first_scheduled == sorted(first_scheduled), "admission is not FCFS"
    for r in all_reqs:
        assert r.output_token_ids == [fake_token(r.request_id, i) for i in range(r.max_tokens)]
    assert sched.kv.num_free_blocks == num_blocks


def test_is_finished_follows_every_status_change() -> None:
    """`is_finished` is an attribute the `status` setter keeps (read several times a request a
    step); `RequestStatus` hashes by identity. Against the statuses' own names."""
    r = make_request(0, prompt_len=3, max_tokens=2)
    assert r.status is RequestStatus.WAITING and r.is_finished is False
    for status in [*RequestStatus, RequestStatus.RUNNING, RequestStatus.FINISHED_ABORTED, RequestStatus.PREEMPTED]:
        r.status = status
        assert r.status is status and r.is_finished is status.name.startswith("FINISHED_"), status
    table = {status: status.value for status in RequestStatus}
    finished = ("stop", "length", "abort", "error")
    assert [table[RequestStatus(v)] for v in finished] == list(finished)
    assert len(set(RequestStatus)) == len(RequestStatus) == 7
