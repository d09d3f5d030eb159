# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`LookupAssist` with `HeldStretch` and `TokenBytes.repeats` in the real engine, randomized (session
34's review): three `generate` calls a seed, 1-10 requests, mixed `max_tokens`, repeating and
fresh prompts (some shorter than n), `prompt_lookup_min` 1-3, `check_every` 1-3, small KV caches
(preemption), both loops. Greedy replies equal plain decoding's; DSpark hears no call while held
steps are unreported, nothing is left unreported after `generate`, and the reports DSpark hears
(adjacent ones at one count merged) are core's. Quiet stretches are held too (session 43): only
the features of their steps (`observe*`) reach DSpark while some are unreported."""

from __future__ import annotations

import random

import pytest
from deepinfer_core import SamplingParams

from deepinfer_dspark.sps import SPSProfile

K = 4
DECODE = SPSProfile([1, 64], [1000.0, 1000.0])
SPS = SPSProfile([1, 64], [300.0, 290.0])    # DSpark pays in theory at 1, random drafter loses: pauses
SPS_ONE = SPSProfile([5, 10, 640], [300.0, 100.0, 50.0])   # pays at 1 request only: dormant at 2+


def _prompts(rng: random.Random, count: int) -> list[list[int]]:
    out = []
    for _ in range(count):
        motif = [rng.randrange(125) for _ in range(rng.randint(2, 6))]
        p = (motif * 12)[: rng.randint(3, 60)]
        if rng.random() < 0.3:
            p = [rng.randrange(125) for _ in range(rng.randint(1, 30))]   # fresh, some shorter than n
        out.append(p)
    return out


def _instrument(llm, log: list, problems: list):
    proposer = llm.engine.speculative.proposer
    inner = proposer.__dict__.get("inner")
    if inner is None:
        return None
    held = proposer.__dict__.get("_held")
    dormant = llm.engine.speculative.dormant
    names = ["propose", "commit", "remove", "idle_rounds", "idle_round", "running", "quiet_rounds",
             "quiet_passed", "observe_step", "observe_many", "observe", "wants_features", "dormant_rounds",
             "dormant_passed"]
    for name in names:
        fn = getattr(inner, name, None)
        if fn is None:
            continue

        def make(fn, name):
            def called(*args):
                if held is not None and held.passed and not (held.quiet and name.startswith("observe")):
                    problems.append(f"{name}{args} reached DSpark with {held.passed} held steps unreported")
                if name in ("dormant_passed", "quiet_passed"):
                    log.append(("dspark", name, args[0], args[1]))
                return fn(*args)
            return called
        setattr(inner, name, make(fn, name))   # instance attribute on DSpark
    core_report, core_quiet = dormant._report, dormant._report_quiet

    def rec(n, r):
        log.append(("core", "dormant_passed", n, r))
        return core_report(n, r)

    def rec_q(n, r):
        log.append(("core", "quiet_passed", n, r))
        return core_quiet(n, r)
    dormant._report, dormant._report_quiet = rec, rec_q
    return inner


def _merged(seq):
    out = []
    for kind, n, r in seq:
        if out and out[-1][0] == kind and out[-1][1] == n:
            out[-1][2] += r
        else:
            out.append([kind, n, r])
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("asynchronous", [False, True])
def test_held_stretches_in_random_engine_runs(folders, kit, seed: int, asynchronous: bool) -> None:
    target, drafter = folders
    rng = random.Random(seed)
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": rng.choice([SPS, SPS_ONE, SPS_ONE]), "decode_profile": DECODE,
            "prompt_lookup_min": rng.choice([1, 2, 3])}
    per_block = kit.build(target).engine.runner.kv_bytes_per_block()
    tight = dict(kv_cache_memory=rng.choice([42, 50, 70]) * per_block, max_num_batched_tokens=64,
                 max_num_seqs=rng.choice([2, 4, 8]))
    calls = []
    for _ in range(3):
        count = rng.choice([1, 1, 2, 3, 6, 10])
        prompts = _prompts(rng, count)
        params = [SamplingParams(temperature=0, max_tokens=rng.randint(1, 90), ignore_eos=True) for _ in prompts]
        calls.append((prompts, params))
    plain = kit.build(target, **tight)
    expected = [[o.outputs[0].token_ids for o in plain.generate([{"prompt_token_ids": p} for p in ps], pa)]
                for ps, pa in calls]
    llm = kit.build(target, spec, async_scheduling=asynchronous, **tight)
    proposer = llm.engine.speculative.proposer
    check_every = rng.choice([1, 1, 2, 3])
    proposer.check_every = check_every
    log, problems = [], []
    assert _instrument(llm, log, problems) is not None   # (the wrapper is there)
    got = []
    for ps, pa in calls:
        outs = llm.generate([{"prompt_token_ids": p} for p in ps], pa)
        assert all(o.error is None for o in outs)
        got.append([o.outputs[0].token_ids for o in outs])
        dormant = llm.engine.speculative.dormant
        held = proposer.__dict__.get("_held")
        # after generate returns, nothing is left unreported (core, wrapper)
        if dormant.passed or (held is not None and held.passed):
            problems.append(f"after generate: core passed {dormant.passed}, held {held and held.passed}"
                            f" (left {held and held.left})")
    assert got == expected
    core = _merged([(k, n, r) for who, k, n, r in log if who == "core"])
    ds = _merged([(k, n, r) for who, k, n, r in log if who == "dspark"])
    if held is not None:
        held.flush()
        ds = _merged([(k, n, r) for who, k, n, r in log if who == "dspark"])
    assert core == ds, (core, ds)
    assert not problems, problems
