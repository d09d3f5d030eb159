# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/sps_profiles.py` `measure_paired`: the decode and speculative profiles measured
together, each size's plain and speculative batches back to back, so a host that drifts or has a
slow spell moves both sides of the ratio every pause decision reads (on the H200 a decode profile
measured first read 11-35% slow, session 46's process d)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest


@pytest.fixture
def profiles(benchmark_script, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))   # engine_probes
    return benchmark_script("sps_profiles")


def drifting_host(profiles, monkeypatch, cost: dict, drift: float) -> list:
    """Fakes `_timed`: a batch of `b` requests on engine `llm` takes `cost[llm] * b` ms a step,
    times a host that gets `drift` slower with every batch run; returns the (engine, size) calls."""
    calls = []

    def timed(llm, batch, chat, max_tokens):
        calls.append((llm, len(batch)))
        per_step = cost[llm] * len(batch) * 1e-3 * (1 + drift) ** len(calls)
        metrics = SimpleNamespace(first_token_time=0.0, finished_time=per_step * 10, spec_rounds=10)
        return [SimpleNamespace(metrics=metrics, outputs=[SimpleNamespace(token_ids=[0] * 11)], error=None)
                for _ in batch]

    monkeypatch.setattr(profiles, "_timed", timed)
    return calls


def arms(profiles) -> list:
    steps = lambda o: len(o.outputs[0].token_ids) - 1   # noqa: E731 (10 steps, as `spec_rounds`)
    return [profiles.Arm("plain", None, "plain", "decode", steps), profiles.Arm("spec", None, "drafted", "k", steps)]


def test_each_size_runs_both_engines_back_to_back_and_either_goes_first(profiles, monkeypatch) -> None:
    calls = drifting_host(profiles, monkeypatch, {"plain": 1.0, "spec": 3.0}, 0.0)
    profiles._measure_arms(arms(profiles), None, [1, 2, 4, 8], 11, 3, "request")
    assert len(calls) == 4 * 2 * 3
    pairs = [calls[i:i + 2] for i in range(0, len(calls), 2)]
    assert all({engine for engine, _ in pair} == {"plain", "spec"} and pair[0][1] == pair[1][1] for pair in pairs)
    for size in (1, 2, 4, 8):
        firsts = [pair[0][0] for pair in pairs if pair[0][1] == size]
        assert set(firsts) == {"plain", "spec"}, f"size {size}: one engine always went first ({firsts})"


def test_a_drifting_host_leaves_the_paired_ratio_right(profiles, monkeypatch) -> None:
    """The host slows 2% a batch: measured one profile after the other, the speculative side reads
    ~1.27x slower against the plain side than it is; paired, the ratio stays within a drift step."""
    cost, sizes = {"plain": 1.0, "spec": 3.0}, [1, 2, 4, 8]
    drifting_host(profiles, monkeypatch, cost, 0.02)
    plain, spec = profiles._measure_arms(arms(profiles), None, sizes, 11, 3, "request")
    for b, p, s in zip(sizes, plain, spec):
        assert p / s == pytest.approx(3.0, rel=0.021)
    drifting_host(profiles, monkeypatch, cost, 0.02)
    alone_plain = profiles._measure_sizes("plain", None, sizes, 11, 3, None, "plain", "request", "decode",
                                          lambda o: 10)
    alone_spec = profiles._measure_sizes("spec", None, sizes, 11, 3, None, "drafted", "request", "k",
                                         lambda o: 10)
    assert all(p / s > 3.0 * 1.2 for p, s in zip(alone_plain, alone_spec))   # the control: one after the other


def test_paired_profiles_from_real_engines(profiles, folders, capsys) -> None:
    target, drafter = folders
    engine_kw = dict(load_format="dummy", dtype="float32", max_model_len=160, block_size=4,
                     kv_cache_memory=32 << 20, deterministic=True, seed=11)
    decode, rounds = profiles.measure_paired(str(target), str(drafter), 3, [1, 2], engine_kw, max_tokens=8,
                                             repeats=2, method="steps", warmup_seconds=0.0)
    out = capsys.readouterr().out
    assert decode.batch_tokens == [1, 2] and rounds.batch_tokens == [4, 8]
    assert all(r > 0 for r in decode.steps_per_s + rounds.steps_per_s)
    assert "paired" in decode.meta["method"] and "paired" in rounds.meta["method"]
    assert rounds.meta["method"].startswith("dspark rounds, k=3") and rounds.meta["drafter"] == str(drafter)
    assert "decode profile warm-up" in out and "k=3 profile warm-up" in out


def test_the_child_returns_both_profiles(profiles, monkeypatch, tmp_path) -> None:
    """`measure_in_child("paired", ...)` hands both profiles back; an unknown kind is refused by name."""
    from deepinfer_dspark.sps import SPSProfile

    def run(argv, **kw):
        request = __import__("json").loads(Path(argv[-1]).read_text())
        out = Path(request["out"])
        SPSProfile([4, 8], [300.0, 250.0]).save(out.with_name("spec_" + out.name))
        SPSProfile([1, 2], [900.0, 800.0]).save(out)
        return SimpleNamespace(returncode=0, stderr="")

    monkeypatch.setattr(profiles.subprocess, "run", run)
    decode, rounds = profiles.measure_in_child("paired", {"k": 3})
    assert decode.batch_tokens == [1, 2] and rounds.steps_per_s == [300.0, 250.0]
    with pytest.raises(ValueError, match="kind"):
        profiles.measure_in_child("both", {})


def test_the_benchmark_takes_both_profiles_from_one_paired_measurement(benchmark_script, monkeypatch,
                                                                        capsys) -> None:
    from deepinfer_dspark.sps import SPSProfile

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    argv = ["bench_dspark.py", "--target", "t", "--drafter", "d", "--fixed", "3", "--interleave", "1",
            "--variants", "none", "confidence", "--sps-paired"]
    monkeypatch.setattr(sys, "argv", argv + ["--sps", "x.json"])
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2 and "--sps-paired" in capsys.readouterr().err
    measured, built = [], {}
    decode, rounds = SPSProfile([1, 8], [1000.0, 900.0]), SPSProfile([4, 32], [400.0, 300.0])
    monkeypatch.setattr(bench, "measure_in_child", lambda kind, params: measured.append((kind, params["k"]))
                        or (decode, rounds))
    monkeypatch.setattr(bench, "run_interleaved", lambda variants, *rest: built.update(variants) or [])
    monkeypatch.setattr(sys, "argv", argv)
    bench.main()
    assert measured == [("paired", 3)]
    assert built["confidence"]["decode_profile"] is decode and built["confidence"]["sps_profile"] is rounds


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
