# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/drain_factor.py`: the straggler factor a fixed-k engine's drains imply."""

from __future__ import annotations

import json
import math
import random

import pytest

from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.stragglers import Stragglers


def step(engine: str, kind: str, running: int, ms: float = 1.0, round_: int = 0, prefill: int = 0,
         emitted: int = 0, verified: int = 0) -> dict:
    return {"engine": engine, "concurrency": 2, "round": round_, "kind": kind, "ms": ms, "running": running,
            "prefill_tokens": prefill, "emitted": emitted, "verified": verified}


def calls(round_: int, plain_ms: float, drafted_ms: float) -> list[dict]:
    """Round `round_` at 2 requests: plain decoding's replies finish after 2 and 4 decode steps,
    fixed-3's after 1 and 3 drafted rounds (a prefill step first; a finished slot stays empty)."""
    plain = [step("none", "plain", 0, plain_ms, round_, prefill=30)]
    plain += [step("none", "plain", n, plain_ms, round_, emitted=n) for n in (2, 2, 1, 1)]
    fixed = [step("fixed-3", "plain", 0, drafted_ms, round_, prefill=30)]
    fixed += [step("fixed-3", "drafted", n, drafted_ms, round_, emitted=3 * n, verified=3 * n) for n in (2, 1, 1)]
    return plain + fixed


def test_finishes_are_read_from_the_running_count(benchmark_script) -> None:
    """A reply finishes after the steps counted before the count drops (decode steps without
    prefill for plain decoding, drafted steps for the engine); those still running at the call's
    end count every step; a count that rises again (a step logged before its update) is not a
    finish."""
    module = benchmark_script("drain_factor")
    rows = calls(0, 1.0, 1.0)
    assert module.finished_at([r for r in rows if r["engine"] == "none"], drafted=False) == [2, 4]
    assert module.finished_at([r for r in rows if r["engine"] == "fixed-3"], drafted=True) == [1, 3]
    bumpy = [step("none", "plain", n) for n in (3, 3, 2, 3, 2, 1, 1)]
    assert module.finished_at(bumpy, drafted=False) == [2, 5, 7]
    # a drop logged on a step that does not count (the verification after the last round): the
    # finished request ran every counted step before it
    tail = [step("f", "drafted", 2), step("f", "drafted", 2), step("f", "plain", 1), step("f", "drafted", 1)]
    assert module.finished_at(tail, drafted=True) == [2, 3]


def test_the_model_is_stragglers_factor_uncapped_on_the_calls_sample(benchmark_script) -> None:
    """On a random sample, the model's value is `Stragglers.factor`'s (which caps it at 1),
    computed apart from the script's own code, for the profiles' step and round costs."""
    module = benchmark_script("drain_factor")
    rng = random.Random(7)
    lengths = [rng.randint(20, 128) for _ in range(24)]
    needs = [max(1, round(n / rng.uniform(1.5, 5.0))) for n in lengths]
    plain = SPSProfile([1, 2, 4, 8], [1000.0, 980.0, 960.0, 900.0])
    spec = SPSProfile([4, 8, 16, 32], [420.0, 400.0, 380.0, 330.0])
    out = module.model_factor(lengths, needs, plain, spec, k=3, batch=4)
    stragglers = Stragglers(lambda b: 1.0 / plain.at(b), lambda b: 1.0 / spec.at(4 * b))
    for length, need in zip(lengths, needs):
        stragglers._sample.append((length, need))
    assert stragglers.factor(4) == pytest.approx(min(1.0, out["factor"]))
    assert out["mean"] == pytest.approx(sum(lengths) / sum(needs))
    assert out["r1"] == pytest.approx(1000.0 / 420.0)
    assert out["rb"] == pytest.approx(960.0 / 380.0)   # 4 requests, 16 tokens a round


def test_main_prints_the_model_beside_what_the_calls_kept(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """Two traced rounds: the sample is both calls' finishes (lengths 2, 4, 2, 4 against rounds
    1, 3, 1, 3); `calls` is the geometric mean of plain decoding's step sums over fixed-3's
    (the prefill step included, as `drafted_calls.py` sums them); `kept` is calls over rounds."""
    module = benchmark_script("drain_factor")
    rows = calls(0, 1.0, 2.0) + calls(2, 1.5, 2.0)
    path = tmp_path / "steps.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plain = SPSProfile([1, 2], [1000.0, 900.0])
    spec = SPSProfile([4, 8], [450.0, 400.0])
    plain.save(tmp_path / "sps_batch.json")
    spec.save(tmp_path / "spec_sps_batch.json")
    monkeypatch.setattr("sys.argv", ["drain_factor.py", str(path), "--concurrency", "2", "--engine", "fixed-3",
                                     "--profile-k", "3"])
    module.main()
    printed = capsys.readouterr().out.splitlines()[-1]
    model = module.model_factor([2, 4, 2, 4], [1, 3, 1, 3], plain, spec, 3, 2)
    calls_ratio = math.sqrt((5 * 1.0) / (4 * 2.0) * (5 * 1.5) / (4 * 2.0))
    cells = [c.strip() for c in printed.strip("|").split("|")]
    assert cells[:4] == ["2", "fixed-3", "2", f"{model['factor']:.3f}"]
    assert cells[7] == f"{calls_ratio:.3f}"
    rounds = float(cells[6])
    assert rounds > 0 and cells[8] == f"{calls_ratio / rounds:.3f}"


def test_a_bad_profile_k_or_no_common_round_is_an_error(benchmark_script, tmp_path, monkeypatch) -> None:
    module = benchmark_script("drain_factor")
    path = tmp_path / "steps.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in calls(0, 1.0, 1.0)))
    SPSProfile([1, 2], [1000.0, 900.0]).save(tmp_path / "sps_batch.json")
    SPSProfile([4, 8], [450.0, 400.0]).save(tmp_path / "spec_sps_batch.json")
    monkeypatch.setattr("sys.argv", ["drain_factor.py", str(path), "--concurrency", "2", "--profile-k", "0"])
    with pytest.raises(SystemExit, match="2"):
        module.main()
    monkeypatch.setattr("sys.argv", ["drain_factor.py", str(path), "--concurrency", "2", "--engine", "fixed-5"])
    with pytest.raises(SystemExit, match="no round traced by both"):
        module.main()
