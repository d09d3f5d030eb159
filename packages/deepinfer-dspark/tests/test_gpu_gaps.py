# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/gpu_gaps.py` on a hand-made trace, and `engine_probes.annotated` on the tiny
engine (the phases it marks appear in a CPU trace; the methods are restored)."""

from __future__ import annotations

import gzip
import json

import pytest
from deepinfer_core import SamplingParams

from deepinfer_dspark.sps import SPSProfile


def _trace(path, events) -> None:
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)


def _x(cat, name, ts, dur, tid=1) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def test_idle_gaps_are_split_by_the_innermost_host_phase(benchmark_script, tmp_path) -> None:
    gpu_gaps = benchmark_script("gpu_gaps")
    path = tmp_path / "a.trace.json.gz"
    events = [
        _x("kernel", "k1", 100, 50), _x("kernel", "k2", 120, 60),     # overlapping: busy 100-180
        _x("gpu_memcpy", "copy", 300, 20),                            # gap 180-300 (120 us)
        _x("kernel", "k3", 323, 10),                                  # gap 320-323: under min_gap
        _x("user_annotation", "propose", 150, 200),                   # 150-350
        _x("user_annotation", "schedule_round", 200, 40),             # 200-240, inside propose
        _x("cpu_op", "aten::add", 0, 1000),                           # not a phase
        {"ph": "i", "name": "instant", "ts": 5},                      # not a complete event
    ]
    _trace(path, events)
    g = gpu_gaps.gaps(path, min_gap=5.0, resolution=1.0)
    assert g["busy"] == pytest.approx((80 + 20 + 10) / 1e3)
    # The span runs from the first GPU event (100) to the last phase's end (350); idle: 180-300, 333-350.
    assert g["wall"] == pytest.approx(250 / 1e3)
    assert g["gaps"] == 2 and g["idle"] == pytest.approx((120 + 17) / 1e3)
    assert g["by_phase"]["schedule_round"] == pytest.approx(40 / 1e3)
    assert g["by_phase"]["propose"] == pytest.approx((120 - 40 + 17) / 1e3)
    assert "-" not in g["by_phase"]
    lines = gpu_gaps.report([path], 5.0, 1.0)
    assert lines[2].startswith("| a.trace.json.gz | 0.25 | 0.11 | 0.14 (2) | propose 0.10, schedule_round 0.04")


def test_a_trace_without_gpu_events_is_refused_by_name(benchmark_script, tmp_path) -> None:
    gpu_gaps = benchmark_script("gpu_gaps")
    path = tmp_path / "cpu.trace.json"
    path.write_text(json.dumps([_x("user_annotation", "propose", 0, 10)]))
    with pytest.raises(ValueError, match="cpu.trace.json: no GPU events"):
        gpu_gaps.gaps(path)


def test_annotated_marks_the_engine_phases_and_restores_them(benchmark_script, folders, kit, tmp_path) -> None:
    probes = benchmark_script("engine_probes")
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [900.0, 890.0]), "decode_profile": SPSProfile([1, 64], [1000.0, 990.0])}
    llm = kit.build(target, spec)
    proposer = llm.engine.speculative.proposer
    prompts = [{"prompt_token_ids": p} for p in kit.prompts(1, seed=3)]
    expected = kit.greedy(kit.build(target), [p["prompt_token_ids"] for p in prompts])
    profiled = tmp_path / "torch.txt"
    outs = []

    def chat(batch, params):   # token-id prompts, EOS ignored: the run `torch_profile_run` makes
        outs.extend(llm.generate(batch, SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)))
        return outs

    llm.chat = chat
    probes.torch_profile_run(llm, prompts, 12, "confidence at 1", profiled)
    assert [o.outputs[0].token_ids for o in outs] == [e[:12] for e in expected]   # output untouched
    trace = tmp_path / "torch-confidence-at-1.trace.json.gz"
    with gzip.open(trace, "rt") as f:
        data = json.load(f)
    names = {e.get("name") for e in data["traceEvents"] if e.get("cat") == "user_annotation"}
    assert {"schedule", "execute", "verify", "observe", "commit", "propose", "draft", "proposer", "dspark",
            "idle_rounds"} <= names
    assert names & {"hook", "settle"}   # (the draft hook: a judged round's, or a lean one's settling)
    assert "==== confidence at 1" in profiled.read_text()
    assert "propose" not in vars(llm.engine.speculative)                   # the class's methods again
    dspark = getattr(proposer, "inner", proposer)   # (patched there inside the default `LookupAssist`)
    assert "draft" not in vars(proposer.runner) and "_plan_pause" not in vars(dspark)
    assert not {"propose", "idle_rounds"} & set(vars(proposer)) and \
        not {"propose", "_lean_round", "_overlapped", "_settle"} & set(vars(dspark))
    import deepinfer_dspark.proposers as proposers
    assert proposers.schedule_round.__name__ == "schedule_round"
    with pytest.raises(ValueError, match="no GPU events"):                  # a CPU run: nothing to split
        benchmark_script("gpu_gaps").gaps(trace)
