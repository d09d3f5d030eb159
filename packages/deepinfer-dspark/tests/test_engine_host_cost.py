# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/engine_host_cost.py`: timing the engine's calls to its proposer changes no output,
and every call the engine makes is counted where it was made."""

from __future__ import annotations

from pathlib import Path

from deepinfer_core import SamplingParams

from deepinfer_dspark.sps import SPSProfile

K = 4
SLOW_ROUNDS = SPSProfile([1, 5, 64, 320], [300.0, 290.0, 250.0, 150.0])   # DSpark pauses: lookup asks every step
DECODE = SPSProfile([1, 64], [1000.0, 1000.0])


def test_the_timed_engine_runs_as_built_and_counts_its_calls(benchmark_script, folders, kit, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("engine_host_cost")
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": SLOW_ROUNDS, "decode_profile": DECODE, "prompt_lookup_min": 2}
    batches = [[{"prompt_token_ids": p} for p in kit.prompts(2, seed)] for seed in (1, 2)]
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)

    def generate(llm):
        return lambda batch, p: llm.generate(batch, p)

    plain = kit.build(target, spec)
    expected = [generate(plain)(batch, params) for batch in batches]
    timed = kit.build(target, spec)
    result, outputs = script.measure(timed, batches, params, generate(timed))
    assert [[o.outputs[0].token_ids for o in out] for out in outputs] == \
        [[o.outputs[0].token_ids for o in out] for out in expected]
    calls = result["calls"]
    assert result["steps"] >= 24 and result["outside_us"] > 0
    asked = calls.get("dormant_rounds", (0, 0.0))[0] + calls.get("quiet_rounds", (0, 0.0))[0]
    assert asked > 0 and calls["_search"][0] > 0 and calls["_due"][0] > 0   # the wrapper searched while paused
    assert all(count > 0 and us >= 0 for count, us in calls.values())
    assert "| _search |" in script.report("confidence", 2, result)
    bare = kit.build(target)   # no speculation: only the steps and the forwards are timed
    none, _ = script.measure(bare, batches, params, generate(bare))
    assert none["steps"] >= 24 and none["calls"] == {}


def test_dspark_phases_are_timed_and_the_module_restored(benchmark_script, folders, kit, monkeypatch) -> None:
    """A drafting engine (rounds that pay at 1 request): DSpark's own phases are counted inside its
    `propose`, and the module functions wrapped for it are put back after the measurement."""
    import deepinfer_dspark.proposers as module

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("engine_host_cost")
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 64, 320], [1000.0, 990.0, 900.0, 500.0]), "decode_profile": DECODE,
            "opening_tokens": 0}
    batches = [[{"prompt_token_ids": p} for p in kit.prompts(1, seed)] for seed in (3, 4)]
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    before = {name: getattr(module, name) for name in script.MODULE_PHASES}
    llm = kit.build(target, spec)
    result, _ = script.measure(llm, batches, params, lambda batch, p: llm.generate(batch, p))
    calls = result["calls"]
    for name in ("inner.propose", "dspark.runner.draft", "dspark.schedule_round", "dspark._plan_pause", "commit"):
        assert calls[name][0] > 0, name
    assert calls["inner.propose"][1] >= calls["dspark.runner.draft"][1]   # the draft runs inside DSpark's propose
    assert {name: getattr(module, name) for name in script.MODULE_PHASES} == before


def test_modes_map_to_their_speculative_configs(benchmark_script, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("engine_host_cost")
    spec, decode = SLOW_ROUNDS, DECODE
    assert script.mode_config("none", "d", spec, decode) is None
    assert script.mode_config("none-again", "d", spec, decode) is None   # plain decoding timed once more
    default = script.mode_config("confidence", "d", spec, decode)
    assert default == {"method": "dspark", "model": "d", "num_speculative_tokens": 7, "scheduling": "confidence",
                       "sps_profile": spec, "decode_profile": decode}
    assert script.mode_config("confidence", "d", spec, decode, untimed=True)["measure_round_times"] is False
    assert script.mode_config("confidence-alone", "d", spec, decode)["prompt_lookup_min"] == 0
    assert script.mode_config("confidence-overlap", "d", spec, decode)["overlap_bookkeeping"] is True
    assert script.mode_config("confidence-unleased", "d", spec, decode)["lease_rounds"] == 0
    assert script.mode_config("fixed-7", "d", spec, decode) == {"method": "dspark", "model": "d",
                                                                "num_speculative_tokens": 7}
