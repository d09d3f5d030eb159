# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`Frontier` and `judge_frontier`: a draining batch's straggler factor capped by how far the
drafted rounds moved its least advanced request, against the mean request."""

from __future__ import annotations

import random

import pytest

from deepinfer_dspark import frontier as fr
from deepinfer_dspark.frontier import Frontier
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.stragglers import Stragglers


def run_rounds(front: Frontier, gains: dict[str, list[int]], start: dict[str, int], now: int = 0) -> None:
    """A run of drafted rounds (`now`, `now` + 1, ...) of the requests in `gains` (each round's tokens per
    request), every request committed, then one more `begin` after a gap (a plain round) to close it."""
    lengths = dict(start)
    rounds = len(next(iter(gains.values())))
    for r in range(rounds):
        front.begin([(rid, lengths[rid], 8) for rid in gains], now + r)
        for rid, tokens in gains.items():
            lengths[rid] += tokens[r]
            front.commit(rid, lengths[rid])
    front.begin([], now + rounds + 1)


def reference_ratio(gains: dict[str, list[int]], start: dict[str, int], age: float = 1.0,
                    by_run: bool = False) -> float:
    """The module docstring's formula, computed apart: per round the frontier's move and the mean
    request's, decayed sums (one run: its plain sums), the prior at 1."""
    lengths, front, mean = dict(start), 0.0, 0.0
    for r in range(len(next(iter(gains.values())))):
        before = min(lengths.values())
        moved = [tokens[r] for tokens in gains.values()]
        for rid, tokens in gains.items():
            lengths[rid] += tokens[r]
        decay = 1.0 if by_run else fr.DECAY
        front = front * decay + (min(lengths.values()) - before)
        mean = mean * decay + sum(moved) / len(moved)
    return min(1.0, (age * front + fr.PRIOR) / (age * mean + fr.PRIOR))


def test_the_ratio_follows_the_least_advanced_request() -> None:
    """Fresh random rounds of 2-8 requests: the ratio is the decayed frontier sum over the decayed
    mean sum (the prior at 1 added), read at the round count's bucket, none before `MIN_SAMPLES`."""
    rng = random.Random(80)
    for _ in range(20):
        count = rng.randint(2, 8)
        rounds = rng.randint(fr.MIN_SAMPLES, 60)
        gains = {f"r{i}": [rng.randint(1, 8) for _ in range(rounds)] for i in range(count)}
        start = {rid: rng.randint(5, 40) for rid in gains}
        bucket = {2: 2, 3: 3, 4: 4, 5: 6, 6: 6, 7: 8, 8: 8}[count]
        for by_run in (False, True):
            front = Frontier(by_run)
            run_rounds(front, gains, start)
            assert front.samples(bucket) == rounds
            want = reference_ratio(gains, start, by_run=by_run)
            assert front.ratio(bucket, rounds - 1) == pytest.approx(want, rel=1e-12)
            assert front.ratio(bucket * 2, rounds) is None   # another bucket: nothing measured


def test_a_slow_request_pulls_the_ratio_down_and_equal_ones_read_one() -> None:
    slow = Frontier(by_run=False)
    run_rounds(slow, {"a": [1] * 40, "b": [5] * 40}, {"a": 10, "b": 10})
    ratio = slow.ratio(2, 40)
    assert ratio is not None and 0.33 < ratio < 0.45   # 1 token a round against a mean of 3, the prior at 1
    even = Frontier()
    run_rounds(even, {"a": [4] * 40, "b": [4] * 40}, {"a": 10, "b": 10})
    assert even.ratio(2, 40) == 1.0
    few = Frontier()
    run_rounds(few, {"a": [1] * (fr.MIN_SAMPLES - 1), "b": [5] * (fr.MIN_SAMPLES - 1)}, {"a": 10, "b": 10})
    assert few.samples(2) == fr.MIN_SAMPLES - 1 and few.ratio(2, 100) is None


def test_which_rounds_and_commits_count() -> None:
    """One request is its own frontier; a round nobody committed was not verified (no sample); a
    request that did not commit verified no drafts and gained one token; a finished request no longer
    holds the frontier; only a request's first commit within the round's reach (1 to most + 1 tokens
    more) counts (a later one is some other step's, e.g. a prompt-lookup step's)."""
    front = Frontier(by_run=False)
    front.begin([("a", 10, 7)])
    front.commit("a", 14)
    front.begin([("a", 14, 7), ("b", 30, 7)])   # closes a's lone round: no sample
    front.begin([("a", 15, 7), ("b", 31, 7)])   # closes a round nobody committed: no sample
    assert front.samples(1) == front.samples(2) == 0
    front.commit("a", 15)   # not above a's tokens before: ignored
    front.commit("b", 40)   # beyond b's reach (31 + 7 + 1): ignored
    front.commit("a", 19)   # a's first commit in reach counts ...
    front.commit("a", 23)   # ... and no later one
    front.begin([("a", 10, 3), ("b", 40, 3), ("c", 50, 3)])   # a +4 and b +1 (no commit: no drafts verified)
    assert front.samples(2) == 1
    front.commit("a", 11)   # a is the frontier, then finishes: b and c remain
    front.commit("b", 44)
    front.commit("c", 53)
    front.finish("a")
    front.begin([])
    assert front.samples(3) == 1 and front.ratio(3, 0) is None   # (one sample: b 40 -> 44, c 50 -> 53)
    for _ in range(fr.MIN_SAMPLES - 2):
        front.begin([("b", 40, 7), ("c", 50, 7)])
        front.commit("b", 44)
        front.commit("c", 56)
    front.begin([])
    assert front.samples(2) == fr.MIN_SAMPLES - 1 and front.ratio(2, 0) is None
    front.begin([("b", 40, 7), ("c", 50, 7)])
    front.commit("c", 56)   # b verified no drafts: 40 -> 41, the frontier moves 1
    front.begin([])
    # bucket 2's rounds: a 15 -> 19 with b 31 -> 32 (front 4, mean 2.5), six of b +4 and c +6, then b +1 and c +6
    fronts = [4.0] + [4.0] * (fr.MIN_SAMPLES - 2) + [1.0]
    means = [2.5] + [5.0] * (fr.MIN_SAMPLES - 2) + [3.5]
    f_sum = m_sum = 0.0
    for f, m in zip(fronts, means):
        f_sum, m_sum = f_sum * fr.DECAY + f, m_sum * fr.DECAY + m
    assert front.ratio(2, 0) == pytest.approx(min(1.0, (f_sum + fr.PRIOR) / (m_sum + fr.PRIOR)), rel=1e-12)


def test_a_run_is_filed_whole_at_the_bucket_it_began_at() -> None:
    """With `by_run` (the default) consecutive rounds (`now` one more each) form a run; it is filed,
    when a round does not follow it, at the bucket of its first round, its rounds summed, requests that
    finished on the way included up to their last round; an open run counts nothing yet; two runs
    decay as their rounds would."""
    front = Frontier()
    lengths = {f"r{i}": 20 for i in range(8)}
    fronts, means = [], []
    for r in range(12):
        alive = sorted(lengths)[: 8 if r < 4 else 2]   # six finish in the fourth round's verification
        for rid in set(lengths) - set(alive):
            front.finish(rid)
            del lengths[rid]
        front.begin([(rid, lengths[rid], 7) for rid in alive], 100 + r)
        before = dict(lengths)
        gains = {rid: 1 + (i * 3 + r) % 7 for i, rid in enumerate(alive)}
        for rid, gain in gains.items():
            lengths[rid] += gain
            front.commit(rid, lengths[rid])
        survivors = alive if r != 3 else sorted(lengths)[:2]   # (the fourth round counts those still running)
        fronts.append(min(lengths[rid] for rid in survivors) - min(before[rid] for rid in survivors))
        means.append(sum(gains[rid] for rid in survivors) / len(survivors))
    assert front.samples(8) == front.samples(2) == 0   # open: nothing filed
    front.begin([("x", 5, 7), ("y", 5, 7)], 120)   # not 112: a plain round between, a new run (at 2 requests)
    assert front.samples(8) == 12 and front.samples(2) == 0
    first = (sum(fronts), sum(means))
    assert front.ratio(8, 111) == pytest.approx(min(1.0, (first[0] + fr.PRIOR) / (first[1] + fr.PRIOR)), rel=1e-12)
    front.commit("x", 6)
    front.commit("y", 12)
    front.begin([(rid, 1, 7) for rid in "abcdefgh"], 125)
    assert front.samples(2) == 1 and front.ratio(2, 120) is None   # (one round: below `MIN_SAMPLES`)
    for r, moved in enumerate(([2] * 8, [3] * 8)):
        for i, rid in enumerate("abcdefgh"):
            front.commit(rid, 1 + moved[i] * (r + 1))
        front.begin([(rid, 1 + moved[0] * (r + 1), 7) for rid in "abcdefgh"], 126 + r)
    front.begin([], 200)   # (the round begun at 127 has no commits: no sample)
    assert front.samples(8) == 14   # 12 rounds, then 2 more (even ones: 2 and 4 tokens each) decayed by 0.98 ** 2
    decay = fr.DECAY ** 2
    front_sum, mean_sum = first[0] * decay + 2 + 4, first[1] * decay + 2 + 4
    assert front.ratio(8, 127) == pytest.approx(min(1.0, (front_sum + fr.PRIOR) / (mean_sum + fr.PRIOR)), rel=1e-12)


def test_old_evidence_fades_towards_one() -> None:
    front = Frontier(by_run=False)
    run_rounds(front, {"a": [1] * 30, "b": [7] * 30}, {"a": 0, "b": 0})
    fresh = front.ratio(2, 30)
    aged = front.ratio(2, 29 + fr.AGE_ROUNDS)   # (the last sample: the round begun at 29)
    old = front.ratio(2, 30 + 40 * fr.AGE_ROUNDS)
    assert fresh < aged < old <= 1.0 and old > 0.99
    gains = {"a": [1] * 30, "b": [7] * 30}
    assert aged == pytest.approx(reference_ratio(gains, {"a": 0, "b": 0}, age=0.5), rel=1e-12)


def test_stragglers_feed_the_frontier(monkeypatch) -> None:
    """`Stragglers` hands the frontier each round's requests (tokens before, most drafts) with the
    clock, each commit, and each finish: a request that finished leaves the round's frontier."""
    monkeypatch.setattr(fr, "MIN_SAMPLES", 1)
    stragglers = Stragglers(lambda b: 0.001, lambda b: 0.003)
    stragglers.frontier = Frontier(by_run=False)
    stragglers.begin([("a", 10, 0, 7), ("b", 20, 0, 7), ("c", 15, 0, 7)], 41)
    for rid, tokens in (("a", 18), ("b", 26), ("c", 16)):
        stragglers.commit(rid, tokens)
    stragglers.finish("a")   # (b and c remain: the frontier moved 15 -> 16, their mean 3.5)
    stragglers.begin([], 43)
    assert stragglers.frontier.now == 43 and stragglers.frontier.samples(3) == 1
    assert stragglers.frontier.ratio(3, 41) == pytest.approx((1 + fr.PRIOR) / (3.5 + fr.PRIOR))   # (read at its round)


def proposer(fake_runner, frontier: bool, draining: bool = True) -> DSparkProposer:
    p = DSparkProposer(fake_runner(4, 0.9), 4, SPSProfile([5, 40], [500.0, 200.0]),
                       decode=SPSProfile([1, 8], [1000.0, 1000.0]), judge_stragglers=True)
    p.judge_frontier = frontier
    p.stragglers.frontier = Frontier()
    p.draining(draining)
    return p


@pytest.mark.parametrize("frontier", [False, True])
def test_the_straggler_factor_is_capped_while_a_batch_drains(fake_runner, frontier: bool) -> None:
    p = proposer(fake_runner, frontier)
    p.stragglers.factor = lambda batch: 0.9
    assert p._straggler_factor(8) == 0.9   # nothing measured yet: the factor alone
    run_rounds(p.stragglers.frontier, {f"r{i}": [1 if i == 0 else 6] * 30 for i in range(8)},
               {f"r{i}": 20 for i in range(8)})
    ratio = p.stragglers.frontier.ratio(8, p._rounds_seen())
    assert ratio is not None and ratio < 0.5
    assert p._straggler_factor(8) == (pytest.approx(ratio) if frontier else 0.9)
    assert p._straggler_factor(4) == 0.9   # the bucket of 4 has no rounds
    p.draining(False)
    assert p._straggler_factor(8) == 1.0   # not draining: no straggler at all


def test_the_judge_frontier_key(folders, kit, benchmark_script) -> None:
    """`speculative_config.judge_frontier` (session 80's candidate): off by default (no `Frontier`
    fed), on the proposer under the prompt-lookup wrapper when set, a bool, confidence-only, and
    only with `judge_stragglers`; `confidence-frontier` asks for it."""
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    default = kit.dspark_proposer(target, spec)
    assert default.judge_frontier is False and default.stragglers.frontier is None
    on = kit.dspark_proposer(target, {**spec, "judge_frontier": True})
    assert on.judge_frontier is True and isinstance(on.stragglers.frontier, Frontier)
    kit.rejects_bool_key(target, drafter, "judge_frontier")
    with pytest.raises(ValueError, match="speculative_config.judge_frontier"):
        kit.build(target, {**spec, "judge_frontier": True, "judge_stragglers": False})
    variants = benchmark_script("bench_variants")
    configs = variants.variant_configs(str(drafter), [4], spec["sps_profile"], spec["decode_profile"])
    assert configs["confidence-frontier"] == {**configs["confidence"], "judge_frontier": True}
    assert "confidence-frontier" in set(variants.NAMED) & set(variants.BY_NAME_ONLY)


def test_an_engine_feeds_the_frontier_and_stays_lossless(folders, kit) -> None:
    """The engine's commits reach the `Frontier` before the next round begins (else no round would
    be a sample), and the outputs are plain decoding's."""
    target, drafter = folders
    spec = {**kit.confidence_spec(drafter), "judge_frontier": True}
    llm = kit.build(target, spec)
    plain = kit.build(target)
    inner = llm.engine.speculative.proposer
    inner = getattr(inner, "inner", inner)
    for seed in range(3):
        batch = kit.prompts(4, seed)
        assert kit.greedy(llm, batch) == kit.greedy(plain, batch)
    front = inner.stragglers.frontier
    assert inner.drafted_rounds > 0 and 0 < front.now <= inner._rounds_seen()   # (the proposer's clock)
    assert sum(front.samples(b) for b in (2, 3, 4)) > 0


def test_frontier_share_reads_the_least_advanced_request(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """`benchmarks/frontier_share.py`: per running count, a drafted step followed by a step of the same
    call at the same count moved the frontier `reply` (next) - `reply`, the mean request `emitted` /
    `running`; the ratio is sum over sum, the speeds against the baseline's median plain step there."""
    import json
    import lzma

    module = benchmark_script("frontier_share")

    def step(engine, kind, ms, running, reply, emitted=0, round_=0, prefill=0, **extra):
        return {"engine": engine, "concurrency": 8, "round": round_, "kind": kind, "ms": ms, "running": running,
                "reply": reply, "emitted": emitted, "prefill_tokens": prefill, **extra}

    rows = [step("none", "plain", 5.0, 4, 0, prefill=30), step("none", "plain", 1.0, 4, 1),
            step("none", "plain", 1.2, 4, 2), step("none", "plain", 1.4, 4, 3),
            step("c", "drafted", 3.0, 4, 10, 16, straggler=0.8),   # frontier 10 -> 12, mean 4
            step("c", "drafted+flush", 4.0, 4, 12, 12),            # frontier 12 -> 17, mean 3
            step("c", "plain", 1.0, 4, 17, 4),
            step("c", "drafted", 3.0, 4, 18, 8),                   # the next step has 3 running: not counted
            step("c", "plain", 1.0, 3, 21, 3),
            step("c", "drafted", 2.0, 3, 30, 9, round_=1)]          # the log's last step: not counted
    out = module.frontier_share([rows])
    assert len(out) == 1
    (c,) = out
    assert (c["engine"], c["running"], c["steps"]) == ("c", 4, 2)
    assert c["frontier"] == pytest.approx(3.5) and c["mean"] == pytest.approx(3.5 * 2 / 2)
    assert c["ratio"] == pytest.approx(7 / 7) and c["ms"] == pytest.approx(3.5) and c["plain_ms"] == pytest.approx(1.2)
    assert c["frontier_speed"] == pytest.approx(3.5 / 3.5 * 1.2) and c["straggler"] == pytest.approx(0.8)
    rows[5]["reply"] = 11   # the flush step's frontier now moves 6, the first one's 1: 7 against 7 still
    rows[4]["emitted"] = 32   # the mean request's 8 + 3
    (c,) = module.frontier_share([rows])
    assert c["ratio"] == pytest.approx(7 / 11) and c["mean_speed"] == pytest.approx(5.5 / 3.5 * 1.2)
    assert module.frontier_share([rows], baseline="missing")[0]["frontier_speed"] is None
    path = tmp_path / "steps.jsonl.xz"
    with lzma.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    monkeypatch.setattr("sys.argv", ["frontier_share.py", str(path), "--min-steps", "2"])
    module.main()
    assert "| 8 | c | 4 | 2 | 3.50 | 5.50 | 0.64 | 3.50 | 1.20 | 1.20 | 1.89 | 0.80 |" in capsys.readouterr().out


def test_frontier_share_runs(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """`frontier_share.py --runs`: consecutive drafted steps of one call followed by a step of it form a
    run, filed by length; its frontier move is `reply` at the step after it less at its first step."""
    import json
    import lzma

    module = benchmark_script("frontier_share")

    def step(kind, running, reply, emitted=0, round_=0, engine="c"):
        return {"engine": engine, "concurrency": 8, "round": round_, "kind": kind, "ms": 1.0, "running": running,
                "reply": reply, "emitted": emitted, "prefill_tokens": 0}

    rows = [step("plain", 4, 0), step("drafted", 4, 1, 16), step("drafted+flush", 4, 3, 12), step("plain", 3, 9),
            step("drafted", 2, 10, 8), step("plain", 2, 11),        # a run of one: 1 against 4
            step("drafted", 2, 12, 6, round_=1),                     # the call's last step: no step after it
            step("drafted", 2, 0, 4, round_=2, engine="d")]
    out = {(r["engine"], r["length"]): r for r in module.drafted_runs([rows])}
    assert set(out) == {("c", 2), ("c", 1)}
    assert out[("c", 2)]["ratio"] == pytest.approx(8 / 7) and out[("c", 2)]["running"] == 4
    assert out[("c", 1)]["ratio"] == pytest.approx(1 / 4) and out[("c", 1)]["runs"] == 1
    path = tmp_path / "steps.jsonl.xz"
    with lzma.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    monkeypatch.setattr("sys.argv", ["frontier_share.py", str(path), "--runs"])
    module.main()
    printed = capsys.readouterr().out
    assert "| 8 | c | 1 | 1 | 0.25 | 2 |" in printed and "| 8 | c | 2 | 1 | 1.14 | 4 |" in printed
