# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/dormant_host_cost.py`: a small run prints a row per engine and the default's calls;
the always-dormant proposer keeps greedy output and is asked nothing but its stretches."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

from deepinfer_dspark.sps import SPSProfile


def test_a_small_run_prints_every_engine_and_the_defaults_calls(benchmark_script, monkeypatch, tmp_path,
                                                                 capsys) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("dormant_host_cost")
    SPSProfile([1, 8], [1000.0, 900.0]).save(tmp_path / "sps_batch.json")
    SPSProfile([1, 64], [400.0, 300.0]).save(tmp_path / "spec_sps_batch.json")   # never pays: dormant
    monkeypatch.setattr(sys, "argv", ["dormant_host_cost.py", "--profiles", str(tmp_path), "--concurrency", "3",
                                      "--max-tokens", "16", "--rounds", "2", "--warmup", "1"])
    script.main()
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| engine")]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == list(script.ENGINES)
    assert rows[0].endswith("| +0.0 |")
    calls = next(line for line in out.splitlines() if line.startswith("default's proposer"))
    assert "track 0." in calls and "remove 0." in calls


def test_the_stub_keeps_greedy_output(benchmark_script, monkeypatch, tmp_path) -> None:
    from deepinfer_core import SamplingParams

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("dormant_host_cost")
    SPSProfile([1, 8], [1000.0, 900.0]).save(tmp_path / "sps_batch.json")
    SPSProfile([1, 64], [400.0, 300.0]).save(tmp_path / "spec_sps_batch.json")
    llms = script.build(("none", "stub", "none-again"), tmp_path, 2)
    assert llms["none-again"].engine.speculative is None   # plain decoding again: the timing's noise floor
    batch = [{"prompt_token_ids": p} for p in script.prompts(2, seed=1)]
    params = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
    outs = {name: [o.outputs[0].token_ids for o in llm.generate(batch, params)] for name, llm in llms.items()}
    assert outs["none"] == outs["stub"] == outs["none-again"] and all(len(t) == 8 for t in outs["none"])
    assert llms["stub"].engine.speculative.dormant.steps > 0


def test_a_closed_loop_run_and_the_engine_without_prompt_lookup(benchmark_script, monkeypatch, tmp_path,
                                                                  capsys) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("dormant_host_cost")
    SPSProfile([1, 8], [1000.0, 900.0]).save(tmp_path / "sps_batch.json")
    SPSProfile([1, 64], [400.0, 300.0]).save(tmp_path / "spec_sps_batch.json")
    llms = script.build(("default", "alone", "quarter"), tmp_path, 2)
    assert hasattr(llms["default"].engine.speculative.proposer, "lookup_rounds")   # `LookupAssist`
    assert not hasattr(llms["alone"].engine.speculative.proposer, "lookup_rounds")
    default, quarter = (llms[name].engine.speculative.proposer for name in ("default", "quarter"))
    assert quarter.search_budget == 0.25 and quarter._every(8) == 4 * default._every(8) == 32   # session 75
    from deepinfer_core import LLM

    seen, generate = [], LLM.generate

    def counted(self, prompts, params=None, *args, **kwargs):
        seen.append((len(prompts), self.engine.scheduler.config.max_num_seqs))
        return generate(self, prompts, params, *args, **kwargs)
    monkeypatch.setattr(LLM, "generate", counted)
    monkeypatch.setattr(sys, "argv", ["dormant_host_cost.py", "--profiles", str(tmp_path), "--concurrency", "3",
                                      "--max-tokens", "16", "--rounds", "1", "--warmup", "0", "--closed-loop", "2",
                                      "--engines", "none", "alone"])
    script.main()
    out = capsys.readouterr().out
    assert "3 requests, closed loop of 6 a call" in out
    assert seen and all(item == (6, 3) for item in seen)   # 2 x 3 prompts a call, at most 3 running
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| engine")]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == ["none", "alone"]


def test_by_running_splits_the_measured_steps_by_requests_running(benchmark_script, monkeypatch, tmp_path,
                                                                  capsys) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("dormant_host_cost")
    SPSProfile([1, 8], [1000.0, 900.0]).save(tmp_path / "sps_batch.json")
    SPSProfile([1, 64], [400.0, 300.0]).save(tmp_path / "spec_sps_batch.json")
    steps = []
    timed = script.Timed

    class Counting(timed):   # every step of every call, to check the table keeps only the measured ones
        def __init__(self, llm, by_running=False):
            super().__init__(llm, by_running)
            inner = llm.engine.step

            def step():
                steps.append((self.on, len(llm.engine.scheduler.running)))   # (the count as the step begins)
                return inner()
            llm.engine.step = step
    monkeypatch.setattr(script, "Timed", Counting)
    from deepinfer_core.executor.model_runner import ModelRunner
    forward = ModelRunner.execute_model

    def slow(self, *args, **kwargs):   # 3 ms a forward: subtracted, it leaves each step's host us well below
        time.sleep(0.003)
        return forward(self, *args, **kwargs)
    monkeypatch.setattr(ModelRunner, "execute_model", slow)
    monkeypatch.setattr(sys, "argv", ["dormant_host_cost.py", "--profiles", str(tmp_path), "--concurrency", "3",
                                      "--max-tokens", "20", "--rounds", "2", "--warmup", "1", "--engines", "none",
                                      "stub", "--by-running"])
    script.main()
    out = capsys.readouterr().out.splitlines()
    start = out.index("| running | none (steps) | stub (steps) |")
    table, medians = {}, []
    for line in out[start + 2:]:
        if not line.startswith("| "):
            break
        n, none, stub = (cell.strip() for cell in line.strip("| ").split(" | "))
        table[int(n)] = (int(none.split("(")[1].rstrip(")")), int(stub.split("(")[1].rstrip(")")))
        medians += [float(none.split(" ")[0]), float(stub.split(" ")[0])]
    assert set(table) >= {0, 3} and set(table) <= {0, 1, 2, 3}
    assert max(medians) < 2500 and min(medians) > 0   # the 3 ms forward is not host time
    assert all(a == b for a, b in table.values())   # the stub never drafts: the same steps at each count
    measured = Counter(count for on, count in steps if on)   # both engines' measured steps by count
    assert {n: a + b for n, (a, b) in table.items()} == dict(measured)
    assert 0 < sum(measured.values()) < len(steps)   # the warm-up call's steps are left out
    same = script.by_running_table({"a": {1: [2.0, 4.0]}, "b": {1: [1.0]}})
    assert same.splitlines()[2:] == ["| 1 | 3.0 (2) | 1.0 (1) |"]
    assert script.by_running_table({"a": {1: [2.0, 4.0]}, "b": {2: [1.0]}}).splitlines()[2:] == [
        "| 1 | 3.0 (2) | - |", "| 2 | - | 1.0 (1) |"]


def test_calls_times_each_speculative_engines_side_over_the_measured_calls(benchmark_script, monkeypatch, tmp_path,
                                                                           capsys) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("dormant_host_cost")
    SPSProfile([1, 8], [1000.0, 900.0]).save(tmp_path / "sps_batch.json")
    SPSProfile([1, 64], [400.0, 300.0]).save(tmp_path / "spec_sps_batch.json")
    monkeypatch.setattr(sys, "argv", ["dormant_host_cost.py", "--profiles", str(tmp_path), "--concurrency", "3",
                                      "--max-tokens", "16", "--rounds", "2", "--warmup", "1", "--engines", "none",
                                      "stub", "default", "--calls"])
    script.main()
    out = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("none: its side") for line in out)   # plain decoding has no such side

    def table(engine: str) -> tuple[int, dict[str, tuple[float, float, float]]]:
        start = next(i for i, line in enumerate(out) if line.startswith(f"{engine}: its side a step, "))
        steps = int(out[start].split(", ")[1].split(" ")[0])
        assert out[start + 1] == "| call | calls a step | us a step | us a call |"
        rows = {}
        for line in out[start + 3:]:
            if not line.startswith("| "):
                break
            name, *cells = (cell.strip() for cell in line.strip("| ").split(" | "))
            rows[name] = tuple(float(c) for c in cells)
        return steps, rows
    for engine in ("stub", "default"):
        steps, rows = table(engine)
        assert steps > 0
        # a step asks core's `DormantSteps` at most once (not one that verifies drafts, nor a call's last,
        # which only reads the step before), and 2 calls of 3 requests track and remove 6
        assert 0.5 < rows["dormant.step"][0] <= 1.0
        assert round(rows["decoder.track"][0] * steps) == 6 and "decoder.remove" in rows
        for calls, us_step, us_call in rows.values():
            assert calls > 0 and us_call > 0 and abs(us_step - calls * us_call) <= 0.01 + 0.01 * us_step
        costs = [us_step for _, us_step, _ in rows.values()]
        assert costs == sorted(costs, reverse=True)
    assert "proposer.remove" in table("default")[1]   # the proposer's own calls, past the wrapper's forwarding


def test_count_calls_prints_python_calls_a_step_per_engine(benchmark_script, monkeypatch, tmp_path,
                                                           capsys) -> None:
    import pstats

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("dormant_host_cost")
    SPSProfile([1, 8], [1000.0, 900.0]).save(tmp_path / "sps_batch.json")
    SPSProfile([1, 64], [400.0, 300.0]).save(tmp_path / "spec_sps_batch.json")   # never pays: dormant
    out_dir = tmp_path / "prof"
    monkeypatch.setattr(sys, "argv", ["dormant_host_cost.py", "--profiles", str(tmp_path), "--concurrency", "3",
                                      "--max-tokens", "16", "--rounds", "1", "--warmup", "1", "--count-calls",
                                      "--profile-dir", str(out_dir), "--engines", "none", "stub", "default"])
    script.main()
    out = capsys.readouterr().out
    table = out.split("under cProfile")[1].splitlines()
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in table if line.startswith("| ")
            and not line.startswith("| engine") and not line.startswith("|---")}
    assert list(rows) == ["none", "stub", "default"]
    counts = {name: float(line.split(" | ")[1]) for name, line in rows.items()}
    steps = {name: int(line.split(" | ")[3].removesuffix(" |")) for name, line in rows.items()}
    assert " | +0.0 (+0.00%) | " in rows["none"]
    assert counts["none"] > 100   # (a step's engine work: scheduling, the forward's modules, outputs)
    assert counts["none"] < counts["stub"] < counts["default"]   # track / remove, then DSpark's own bookkeeping
    for name in rows:
        stats = pstats.Stats(str(out_dir / f"{name}.prof"))
        assert steps[name] >= (16 if name == "none" else 1)   # (plain decoding: a step a token, replies of 16 or more)
        assert abs(stats.total_calls - counts[name] * steps[name]) <= 0.05 * steps[name] + 1   # the whole call, a step


def test_profile_dir_needs_count_calls(benchmark_script, monkeypatch, tmp_path) -> None:
    import pytest

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("dormant_host_cost")
    monkeypatch.setattr(sys, "argv", ["dormant_host_cost.py", "--profiles", str(tmp_path), "--profile-dir",
                                      str(tmp_path / "p")])
    with pytest.raises(SystemExit) as stopped:
        script.main()
    assert stopped.value.code == 2   # argparse's usage error
    for argv in (["--count-calls", "--warmup", "0"],):   # the first call carries the process's one-time work
        monkeypatch.setattr(sys, "argv", ["dormant_host_cost.py", "--profiles", str(tmp_path), *argv])
        with pytest.raises(SystemExit) as stopped:
            script.main()
        assert stopped.value.code == 2
