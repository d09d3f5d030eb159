# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/paired_pool.py` on hand-written `bench_dspark.py` logs: rows read, traced rounds
dropped, ratios pooled round by round, the bootstrap interval around the geometric mean."""

from __future__ import annotations

import math
import random

import pytest


def _log(path, rows) -> None:
    lines = ["some setup output", "1 none {'tok/s': 900.0} so far drafted 0 paired rounds [1.0, 1.0, 1.0]"]
    for c, name, ratios in rows:
        lines.append(f"{c} {name} {{'tok/s': 1.0, 'paired': 1.0}} so far drafted 3 (1 lean) paired rounds {ratios}")
    lines.append("| concurrency | method | output tok/s |")
    path.write_text("\n".join(lines) + "\n")


def test_rows_are_read_and_traced_rounds_dropped(benchmark_script, tmp_path) -> None:
    pool = benchmark_script("paired_pool")
    path = tmp_path / "bench_batch.log"
    _log(path, [(8, "confidence", [0.5, 1.1, 1.2, 0.4, 1.3]), (8, "none-again", [2.0, 0.9, 1.0, 3.0, 1.1])])
    rounds = pool.read_rounds(path)
    assert rounds[(8, "confidence")] == [0.5, 1.1, 1.2, 0.4, 1.3]
    assert rounds[(1, "none")] == [1.0, 1.0, 1.0]
    kept = pool.read_rounds(path, drop_every=3)   # rounds 0 and 3 traced
    assert kept[(8, "confidence")] == [1.1, 1.2, 1.3]
    assert kept[(8, "none-again")] == [0.9, 1.0, 1.1]
    with pytest.raises(ValueError, match="drop_every"):
        pool.read_rounds(path, drop_every=1)
    empty = tmp_path / "empty.log"
    empty.write_text("rc 1 in 3 s\n")
    with pytest.raises(ValueError, match="no `paired rounds`"):
        pool.read_rounds(empty)


def test_pooled_ratios_pair_the_same_rounds_across_cells(benchmark_script, tmp_path) -> None:
    pool = benchmark_script("paired_pool")
    rng = random.Random(7)
    a8, b8 = [rng.uniform(0.6, 1.4) for _ in range(4)], [rng.uniform(0.6, 1.4) for _ in range(4)]
    a32, b32 = [rng.uniform(0.6, 1.4) for _ in range(3)], [rng.uniform(0.6, 1.4) for _ in range(3)]
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    _log(first, [(8, "confidence", a8), (8, "none-again", b8), (64, "confidence", [1.0, 1.0])])   # 64: no pair
    _log(second, [(32, "confidence", a32), (32, "none-again", b32)])
    cells = [pool.read_rounds(first), pool.read_rounds(second)]
    out = pool.pooled(cells, "confidence", "none-again", None)
    assert out["confidence"] == a8 + a32
    assert out["confidence/none-again"] == pytest.approx([x / y for x, y in zip(a8 + a32, b8 + b32)])
    only32 = pool.pooled(cells, "confidence", "none-again", [32])
    assert only32["none-again"] == b32
    expected = math.exp(sum(math.log(x / y) for x, y in zip(a8 + a32, b8 + b32)) / 7)
    assert pool.geomean(out["confidence/none-again"]) == pytest.approx(expected)


def test_bootstrap_interval_brackets_the_mean_and_narrows_with_rounds(benchmark_script) -> None:
    pool = benchmark_script("paired_pool")
    rng = random.Random(3)
    few = [math.exp(rng.gauss(0.02, 0.1)) for _ in range(10)]
    many = [math.exp(rng.gauss(0.02, 0.1)) for _ in range(400)]
    low, high = pool.bootstrap(few, draws=4000)
    assert low < pool.geomean(few) < high
    low_many, high_many = pool.bootstrap(many, draws=4000)
    assert high_many - low_many < (high - low) / 3   # ~ 1/sqrt(40) as wide
    assert low_many < 1.02 < high_many * 1.01
    with pytest.raises(ValueError, match="positive"):
        pool.geomean([1.0, 0.0])
    with pytest.raises(ValueError, match="positive"):
        pool.bootstrap([])


def test_bootstrap_reads_the_2_5_and_97_5_percentiles(benchmark_script) -> None:
    pool = benchmark_script("paired_pool")
    # logs 0 and 1, 50 each: the mean log of a resample ~ N(0.5, 0.05); its 95% interval is
    # 0.5 +- 0.098, against +- ~0.2 for the draws' extremes and +- ~0.034 for the quartiles
    low, high = pool.bootstrap([1.0] * 50 + [math.e] * 50, draws=20000)
    assert math.exp(0.5 - 0.115) < low < math.exp(0.5 - 0.08)
    assert math.exp(0.5 + 0.08) < high < math.exp(0.5 + 0.115)


def test_rows_that_cannot_be_paired_are_refused(benchmark_script, tmp_path) -> None:
    pool = benchmark_script("paired_pool")
    twice = tmp_path / "twice.log"   # two processes' logs concatenated
    _log(twice, [(8, "confidence", [1.0, 1.1]), (8, "none-again", [1.0, 0.9]), (8, "confidence", [0.5, 0.6])])
    with pytest.raises(ValueError, match="twice.log:5: a second row for 8 requests"):
        pool.read_rounds(twice)
    uneven = tmp_path / "uneven.log"
    _log(uneven, [(8, "confidence", [1.0, 1.1, 1.2]), (8, "none-again", [1.0, 0.9])])
    with pytest.raises(ValueError, match="3 rounds of 'confidence' against 2"):
        pool.pooled([pool.read_rounds(uneven)], "confidence", "none-again", None)
    with pytest.raises(ValueError, match="must differ"):
        pool.pooled([pool.read_rounds(uneven)], "confidence", "confidence", None)
    bad = tmp_path / "bad.log"
    _log(bad, [(8, "confidence", [1.0, 0.0])])
    with pytest.raises(ValueError, match="bad.log:3: paired rounds: every ratio must be positive"):
        pool.read_rounds(bad)


def test_logs_taken_as_the_sample(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """`--by-log`: each log's A/B geometric mean, then a Student t interval across the logs on the
    log scale (checked against a hand computation) and how many read below 1."""
    pool = benchmark_script("paired_pool")
    means = [0.98, 0.95, 1.01]
    logs = [math.log(x) for x in means]
    centre = sum(logs) / 3
    half = 4.303 * math.sqrt(sum((x - centre) ** 2 for x in logs) / 2) / math.sqrt(3)   # t(0.975, 2 df)
    got = pool.across_logs(means)
    assert got[0] == pytest.approx(math.exp(centre)) and got[3] == 2
    assert got[1] == pytest.approx(math.exp(centre - half)) and got[2] == pytest.approx(math.exp(centre + half))
    for bad in ([1.0], [1.0, 0.0]):
        with pytest.raises(ValueError):
            pool.across_logs(bad)
    paths = []
    for i, (a, b) in enumerate([([0.9, 1.0], [1.0, 1.0]), ([1.0, 1.0], [0.95, 1.05])]):
        paths.append(tmp_path / f"run/out-{i}/bench_batch.log")
        paths[-1].parent.mkdir(parents=True)
        _log(paths[-1], [(8, "confidence", a), (8, "none-again", b)])
    paths[1].write_text("built in order: none-again, none, confidence\n" + paths[1].read_text())   # (session 84)
    assert pool.read_build_order(paths[0]) is None and pool.read_build_order(paths[1])[0] == "none-again"
    monkeypatch.setattr("sys.argv", ["paired_pool.py", *map(str, paths), "--by-log"])
    pool.main()
    out = capsys.readouterr().out
    first, second = math.sqrt(0.9), math.sqrt(1 / 0.95 / 1.05)
    assert f"- run/out-0: confidence/none-again {first:.3f} (2 rounds)" in out
    assert f"- run/out-1: confidence/none-again {second:.3f} (2 rounds; built confidence#3 none-again#1)" in out
    assert f"Across 2 logs: confidence/none-again {math.sqrt(first * second):.3f}" in out and "1 of 2 below 1" in out


def test_quantiles_by_nearest_rank_and_printed_per_ratio(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """`quantiles`: the value of rank ceil(q * n) of the sorted values (hand-checked ranks on a
    shuffled list); `--quantiles` prints one row per pooled ratio, the lower tail included."""
    pool = benchmark_script("paired_pool")
    values = [x / 20 for x in range(1, 21)]   # 0.05 .. 1.00
    random.Random(3).shuffle(values)
    assert pool.quantiles(values, (0.05, 0.5, 0.51, 1.0)) == [0.05, 0.5, 0.55, 1.0]
    assert pool.quantiles([2.0], (0.1, 0.9)) == [2.0, 2.0]
    for bad, at in (([], (0.5,)), ([1.0], (0.0,)), ([1.0], (1.5,))):
        with pytest.raises(ValueError, match="quantiles"):
            pool.quantiles(bad, at)
    path = tmp_path / "run/out-a/bench_batch.log"
    path.parent.mkdir(parents=True)
    ratios = [0.7, 0.95, 1.0, 1.0, 1.02]
    _log(path, [(8, "confidence", ratios), (8, "none-again", [1.0] * 5)])
    monkeypatch.setattr("sys.argv", ["paired_pool.py", str(path), "--quantiles"])
    pool.main()
    out = capsys.readouterr().out
    row = "| confidence/none-again | " + " | ".join(f"{x:.3f}" for x in pool.quantiles(ratios)) + " |"
    assert row in out and row.startswith("| confidence/none-again | 0.700 | 0.700 | 0.700 | 1.000 |")


def _drafts_log(path, rows) -> None:
    """A session-78 log: each row also carries `call drafts [...] call dspark [...]` before `paired rounds`."""
    lines = ["1 none {'tok/s': 900.0} so far drafted 0 call drafts [0, 0, 0, 0] call dspark [0, 0, 0, 0] "
             "paired rounds [1.0, 1.0, 1.0, 1.0]"]
    for c, name, drafts, dspark, ratios in rows:
        lines.append(f"{c} {name} {{'tok/s': 1.0}} so far lookup 2 rounds call drafts {drafts} call dspark {dspark} "
                     f"paired rounds {ratios}")
    path.write_text("\n".join(lines) + "\n")


def test_rounds_split_by_what_the_engines_call_drafted(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """`read_drafts` keeps the rounds `read_rounds` keeps; `split_drafted` files each A/B round by A's
    call: a DSpark round, prompt-lookup drafts alone, or none; `--split-drafted` prints each side's
    share, geometric mean and part of the pooled log mean (the parts add up to it), `--drop-every`
    applied to both readers alike."""
    pool = benchmark_script("paired_pool")
    path = tmp_path / "run/out-a/bench_batch.log"
    path.parent.mkdir(parents=True)
    a, b = [0.8, 1.0, 0.9, 1.05, 0.7, 1.2], [1.0, 0.9, 1.1, 1.0, 1.4, 0.8]
    drafts, dspark = [2, 0, 5, 3, 1, 0], [2, 0, 0, 3, 0, 0]
    _drafts_log(path, [(8, "confidence", drafts, dspark, a), (8, "none-again", [0] * 6, [0] * 6, b)])
    assert pool.read_drafts(path)[(8, "confidence")] == list(zip(drafts, dspark))
    assert pool.read_drafts(path, drop_every=2)[(8, "confidence")] == [(0, 0), (3, 3), (0, 0)]   # rounds 1, 3, 5
    split = pool.split_drafted([pool.read_rounds(path)], [pool.read_drafts(path)], "confidence", "none-again", None)
    ratio = [x / y for x, y in zip(a, b)]
    assert split == {"dspark": pytest.approx([ratio[0], ratio[3]]), "lookup only": pytest.approx([ratio[2], ratio[4]]),
                     "plain": pytest.approx([ratio[1], ratio[5]])}
    monkeypatch.setattr("sys.argv", ["paired_pool.py", str(path), "--split-drafted", "--drop-every", "2"])
    pool.main()
    out = capsys.readouterr().out
    kept = [ratio[1], ratio[3], ratio[5]]   # plain, dspark, plain
    assert f"| dspark | 1 | 0.333 | {ratio[3]:.3f} (" in out and f"| {math.log(ratio[3]) / 3:+.4f} |" in out
    assert "| lookup only | 0 | 0.000 | - | - |" in out
    plain = math.log(kept[0]) + math.log(kept[2])
    assert f"| plain | 2 | 0.667 | {math.exp(plain / 2):.3f} (" in out and f"| {plain / 3:+.4f} |" in out
    old = tmp_path / "old.log"
    _log(old, [(8, "confidence", a), (8, "none-again", b)])
    with pytest.raises(ValueError, match="no `call drafts"):
        pool.read_drafts(old)
    for bad_drafts, bad_dspark, message in (([1, -2, 0, 0, 0, 0], [0] * 6, "integer >= 0"),
                                            ([1, True, 0, 0, 0, 0], [0] * 6, "integer >= 0"),
                                            ([1, 0, 0, 0, 0, 0], [0] * 5, "different lengths")):
        bad = tmp_path / "bad.log"
        _drafts_log(bad, [(8, "confidence", bad_drafts, bad_dspark, a)])
        with pytest.raises(ValueError, match=message):
            pool.read_drafts(bad)
    short = tmp_path / "short.log"
    _drafts_log(short, [(8, "confidence", [1, 0], [1, 0], a), (8, "none-again", [0, 0], [0, 0], b)])
    with pytest.raises(ValueError, match="2 call drafts for 6 rounds"):
        pool.split_drafted([pool.read_rounds(short)], [pool.read_drafts(short)], "confidence", "none-again", None)
    with pytest.raises(ValueError, match="1 logs of rounds against 2"):
        pool.split_drafted([pool.read_rounds(path)], [pool.read_drafts(path)] * 2, "confidence", "none-again", None)
    with pytest.raises(ValueError, match="must differ"):
        pool.split_drafted([pool.read_rounds(path)], [pool.read_drafts(path)], "confidence", "confidence", None)
