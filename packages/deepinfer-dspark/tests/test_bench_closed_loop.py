# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`bench_dspark.py --closed-loop`: each call keeps at most C requests running (serving
benchmarks' max concurrency), on an engine built for more."""

from __future__ import annotations

from pathlib import Path

import pytest



def fake_outputs(prompts) -> list:
    """What a fake engine's `chat` returns: two tokens a prompt, with the metrics the benchmark reads."""
    from types import SimpleNamespace

    return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1, 2])],
                            metrics=SimpleNamespace(arrival_time=0.0, first_token_time=0.5, finished_time=1.0,
                                                    spec_rounds=0))
            for _ in prompts]

def test_the_cap_holds_the_running_requests_and_is_restored(folders, kit, benchmark_script, monkeypatch) -> None:
    from deepinfer_core import SamplingParams

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    probes = benchmark_script("engine_probes")
    target, _ = folders
    llm = kit.build(target, max_num_seqs=8)
    scheduler = llm.engine.scheduler
    seen = []
    schedule = scheduler.schedule

    def watched(*args, **kw):
        out = schedule(*args, **kw)
        seen.append(len(scheduler.running))
        return out

    monkeypatch.setattr(scheduler, "schedule", watched)
    prompts = [{"prompt_token_ids": p} for p in kit.prompts(6, seed=3)]
    params = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
    with probes.concurrency_cap(llm, 2):
        capped = llm.generate(prompts, params)
    assert max(seen) == 2 and all(len(o.outputs[0].token_ids) == 6 for o in capped)
    assert scheduler.config.max_num_seqs == 8
    seen.clear()
    free = llm.generate(prompts, params)
    assert max(seen) == 6   # without the cap every prompt runs at once
    assert [o.outputs[0].token_ids for o in free] == [o.outputs[0].token_ids for o in capped]
    llm.close()


def test_closed_loop_needs_interleave(benchmark_script, monkeypatch, capsys) -> None:
    import sys

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    monkeypatch.setattr(sys, "argv", ["bench_dspark.py", "--target", "t", "--drafter", "d", "--closed-loop", "4"])
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2 and "--closed-loop" in capsys.readouterr().err


def test_per_user_speed_of_a_queued_call_starts_at_the_first_token(benchmark_script, monkeypatch) -> None:
    """A request that waited for a slot (`--closed-loop`) is timed from its first token, not its
    arrival; one without a first token (an error) is left out."""
    from types import SimpleNamespace

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")

    def out(tokens, first):
        metrics = SimpleNamespace(arrival_time=0.0, first_token_time=first, finished_time=12.0, spec_rounds=0,
                                  spec_verified=0, spec_accepted=0)
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1] * tokens)], metrics=metrics)

    outs = [out(5, 10.0), out(9, 4.0)]
    queued = bench._numbers(outs + [out(3, None)], 12.0, queued=True)
    assert queued["per-user tok/s"] == pytest.approx((4 / 2 + 8 / 8) / 2) and queued["tokens"] == 17
    batch = bench._numbers(outs, 12.0)
    assert batch["per-user tok/s"] == pytest.approx((5 / 12 + 9 / 12) / 2) and batch["tok/s"] == pytest.approx(14 / 12)


def test_a_mixed_suffix_turns_mixed_step_graphs_on_for_that_engine_only(benchmark_script, monkeypatch,
                                                                        capsys) -> None:
    """`none+mixed` pairs an engine with mixed-step CUDA graphs against `none` in one process; the
    suffix on an unknown variant is refused by name."""
    import sys

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    base = {"dtype": "auto", "mixed_cuda_graphs": False}
    assert bench.variant_engine_kw("none+mixed", base) == {"dtype": "auto", "mixed_cuda_graphs": True}
    assert bench.variant_engine_kw("confidence", base) == base and base["mixed_cuda_graphs"] is False
    monkeypatch.setattr(sys, "argv", ["bench_dspark.py", "--target", "t", "--drafter", "d", "--fixed", "3",
                                      "--variants", "none", "fixed-3+mixed", "fixed-4+mixed"])
    with pytest.raises(SystemExit) as exit_:
        bench.main()   # refused before any profile is measured or engine built
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "fixed-4+mixed" in err and "fixed-3+mixed" not in err.split("choose")[0]


def test_a_thawed_suffix_turns_the_frozen_heap_off_for_that_engine_only(benchmark_script, monkeypatch,
                                                                        capsys) -> None:
    """`confidence+thawed` pairs the default with an engine whose calls leave the heap unfrozen
    (`freeze_heap` off); its config is the base variant's; the suffix on an unknown variant is
    refused by name."""
    import sys

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    base = {"dtype": "auto"}
    assert bench.variant_engine_kw("confidence+thawed", base) == {"dtype": "auto", "freeze_heap": False}
    assert bench.variant_engine_kw("none", base) == base and "freeze_heap" not in base
    assert bench.base_name("confidence-k1+thawed") == "confidence-k1" and bench.base_name("none") == "none"
    both = {"dtype": "auto", "mixed_cuda_graphs": True, "freeze_heap": False}   # two suffixes, either order
    assert bench.variant_engine_kw("none+thawed+mixed", base) == both
    assert bench.variant_engine_kw("none+mixed+thawed", base) == both
    assert bench.base_name("none+mixed+thawed") == "none" == bench.base_name("none+thawed+mixed")
    assert bench.variant_engine_kw("confidence+packed", base) == {"dtype": "auto", "packed_graph_inputs": True}
    assert bench.base_name("none+packed+thawed") == "none"
    assert bench.chosen({"none": None, "confidence": {"k": 1}}, ["none", "confidence+thawed"]) == \
        {"none": None, "confidence+thawed": {"k": 1}}
    monkeypatch.setattr(sys, "argv", ["bench_dspark.py", "--target", "t", "--drafter", "d", "--fixed", "3",
                                      "--variants", "none", "fixed-3+thawed", "fixed-5+thawed"])
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "fixed-5+thawed" in err and "fixed-3+thawed" not in err.split("choose")[0]


def test_mixed_variants_need_engines_without_the_graphs_and_keep_their_profiles(benchmark_script, monkeypatch,
                                                                                 capsys) -> None:
    """With the graphs on by default, `none+mixed` against `none` would compare two equal engines:
    refused without --no-mixed-cuda-graphs. With it, `confidence-k1+mixed` is built like
    `confidence-k1` (the k = 1 rounds' profile measured and handed over) and graphs on."""
    import sys

    from deepinfer_dspark.sps import SPSProfile

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    argv = ["bench_dspark.py", "--target", "t", "--drafter", "d", "--fixed", "3", "--interleave", "1",
            "--variants", "none", "confidence-k1+mixed"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2 and "--no-mixed-cuda-graphs" in capsys.readouterr().err
    measured, built = [], {}

    def fake_profile(kind, params):
        measured.append((kind, params.get("k"), params["engine_kw"].get("mixed_cuda_graphs")))
        return SPSProfile([1, 8], [1000.0, 900.0])

    def fake_run(variants, args, engine_kw, pool):
        built.update({name: (spec, bench.variant_engine_kw(name, engine_kw)) for name, spec in variants.items()})
        return []

    monkeypatch.setattr(bench, "measure_in_child", fake_profile)
    monkeypatch.setattr(bench, "run_interleaved", fake_run)
    monkeypatch.setattr(sys, "argv", argv + ["--no-mixed-cuda-graphs"])
    bench.main()
    assert sorted(measured) == [("decode", None, False), ("spec", 1, False), ("spec", 3, False)]
    spec, engine = built["confidence-k1+mixed"]
    assert spec["sps_profile_k1"] is not None and engine["mixed_cuda_graphs"] is True
    assert built["none"] == (None, built["none"][1]) and built["none"][1]["mixed_cuda_graphs"] is False


def test_every_name_accepted_up_front_is_built(benchmark_script, monkeypatch) -> None:
    """The names checked before the profiles (`NAMED`, fixed-K) are the variants `main` builds."""
    import sys

    from deepinfer_dspark.sps import SPSProfile

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    built = {}
    monkeypatch.setattr(bench, "measure_in_child", lambda kind, params: SPSProfile([1, 8], [1000.0, 900.0]))
    monkeypatch.setattr(bench, "run_interleaved", lambda variants, *rest: built.update(variants) or [])
    names = [*bench.NAMED, "fixed-2", "ngram-2", "ngram-aware-2"]
    monkeypatch.setattr(sys, "argv", ["bench_dspark.py", "--target", "t", "--drafter", "d", "--fixed", "2",
                                      "--interleave", "1", "--variants", *names])
    bench.main()
    assert list(built) == names
    assert built["confidence-rounds"]["measure_round_times"] is True and built["none-again"] is None
    assert built["ngram-2"] == {"method": "ngram", "num_speculative_tokens": 2}
    assert built["ngram-aware-2"]["scheduling"] == "load_aware" and built["ngram-aware-2"]["decode_profile"] is not None
    assert built["confidence-lookup"]["prompt_lookup_min"] == 2
    assert built["confidence-alone"]["prompt_lookup_min"] == 0 and "prompt_lookup_min" not in built["confidence"]
    assert built["confidence-alone-rounds"]["prompt_lookup_min"] == 0
    assert built["confidence-alone-rounds"]["measure_round_times"] is True
    assert built["confidence-untimed"]["measure_round_times"] is False
    assert "measure_round_times" not in built["confidence"]   # (the engine's default: timed)
    assert built["confidence-rounds-hurdle"]["min_gain"] == 1.1
    assert built["confidence-tail"]["tail_rounds"] is True and "tail_rounds" not in built["confidence"]


@pytest.mark.parametrize("warmups", [None, 0, 2])
def test_interleaved_runs_profile_each_engine_after_the_measured_calls(benchmark_script, monkeypatch,
                                                                        warmups) -> None:
    """`--profile` / `--torch-profile` with `--interleave`: one more call per engine at each
    `--profile-at` concurrency, after every measured call (they were silently ignored there
    until session 35). Before each concurrency's rounds, `--warmup-calls` calls of its first
    prompt set per engine (default 1; 0: one call of one prompt, the harness before session 56)."""
    from types import SimpleNamespace

    import deepinfer_core

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    events = []

    class FakeLLM:
        def __init__(self, target, speculative_config=None, **kw):
            self.name = "spec" if speculative_config else "plain"

        def chat(self, prompts, params):
            events.append(("chat", self.name, len(prompts)))
            return fake_outputs(prompts)

        def close(self):
            events.append(("close", self.name))

    monkeypatch.setattr(deepinfer_core, "LLM", FakeLLM)
    monkeypatch.setattr(bench, "proposer_state", lambda llm, c: "")
    monkeypatch.setitem(bench.paired_rows.__globals__, "proposer_state", lambda llm, c: "")   # (`paired_calls`)
    monkeypatch.setattr(bench, "profile_run", lambda llm, prompts, n, label, path: events.append(("cprofile", label)))
    monkeypatch.setattr(bench, "torch_profile_run", lambda llm, prompts, n, label, p: events.append(("torch", label)))
    args = SimpleNamespace(target="t", max_tokens=4, step_log=None, step_times=False, concurrency=[1, 2], closed_loop=0,
                           prompt_sets=1, interleave=2, out=None, profile=Path("p.txt"), torch_profile=Path("t.txt"),
                           profile_at=[2])
    if warmups is not None:
        args.warmup_calls = warmups
    pool = [[{"role": "user", "content": str(i)}] for i in range(4)]
    bench.run_interleaved({"none": None, "confidence": {"method": "dspark"}}, args, {}, pool)
    plain = [e[2] for e in events if e[:2] == ("chat", "plain")]
    n = 1 if warmups is None else max(warmups, 1)   # warm-up calls per engine and concurrency
    sizes = (lambda c: 1) if warmups == 0 else (lambda c: c)
    assert plain[:n] == [sizes(1)] * n and plain[n + 2:2 * n + 2] == [sizes(2)] * n   # then 2 measured calls
    profiled = [e for e in events if e[0] in ("cprofile", "torch")]
    assert profiled == [("cprofile", "none at 2"), ("torch", "none at 2"),
                        ("cprofile", "confidence at 2"), ("torch", "confidence at 2")]
    first = events.index(profiled[0])
    assert all(e[0] != "chat" for e in events[first:]) and events[-1][0] == "close"
    assert sum(e[:2] == ("chat", "plain") for e in events[:first]) == 2 * n + 2 * 2   # warm-ups and measured calls


def test_the_dormant_stub_is_the_defaults_engine_asking_nothing(folders, kit, benchmark_script, monkeypatch) -> None:
    """`dormant-stub` (session 54): core's share of a dormant step on the GPU, with plain output."""
    from deepinfer_dspark.sps import SPSProfile

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    variants = benchmark_script("bench_variants")
    target, drafter = folders
    profile = SPSProfile([1, 64], [1000.0, 900.0])
    configs = variants.variant_configs(str(drafter), [3], profile, profile)
    assert "dormant-stub" in variants.NAMED and "dormant-stub" in variants.BY_NAME_ONLY
    assert configs["dormant-stub"] == configs["confidence"]
    stub = variants.built("dormant-stub", kit.build(target, configs["dormant-stub"]))
    plain = kit.build(target)
    assert isinstance(stub.engine.speculative.proposer, variants.AlwaysDormant)
    batch = kit.prompts(5, seed=9)
    assert kit.greedy(stub, batch) == kit.greedy(plain, batch)
    assert stub.engine.speculative.dormant.steps > 0
    stub.close()
    plain.close()


def test_search_all_is_the_default_wrapper_searching_every_request(folders, kit, benchmark_script,
                                                                     monkeypatch) -> None:
    """`confidence-search-all` (session 54): the default with `LookupAssist.search_budget` inf;
    `confidence-search-quarter` (session 74) with 0.25."""
    from deepinfer_dspark.lookup_assist import SEARCH_BUDGET
    from deepinfer_dspark.sps import SPSProfile

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    variants = benchmark_script("bench_variants")
    target, drafter = folders
    profile = SPSProfile([1, 64], [1000.0, 900.0])
    configs = variants.variant_configs(str(drafter), [3], profile, profile)
    assert configs["confidence-search-all"] == configs["confidence"]
    default = kit.build(target, configs["confidence"])
    everything = variants.built("confidence-search-all", kit.build(target, configs["confidence-search-all"]))
    assert default.engine.speculative.proposer.search_budget == SEARCH_BUDGET
    wrapper = everything.engine.speculative.proposer
    assert wrapper.search_budget == float("inf") and wrapper._every(64) == wrapper.check_every
    assert configs["confidence-search-quarter"] == configs["confidence"]   # session 74: a quarter of the budget
    quarter = variants.built("confidence-search-quarter", kit.build(target, configs["confidence-search-quarter"]))
    sparse = quarter.engine.speculative.proposer
    assert sparse.search_budget == 0.25 and sparse._every(8) == 32 > default.engine.speculative.proposer._every(8)
    assert "confidence-search-quarter" in variants.BY_NAME_ONLY
    default.close()
    everything.close()
    quarter.close()


def test_closed_loop_warm_ups_run_the_first_set_under_the_cap(benchmark_script, monkeypatch) -> None:
    """`--warmup-calls` with `--closed-loop M`: each engine's warm-up call is the concurrency's first
    prompt set (C x M prompts) with at most C running, as its measured calls are."""
    import dataclasses
    from types import SimpleNamespace

    import deepinfer_core

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    calls, engines = [], []

    @dataclasses.dataclass
    class Config:
        max_num_seqs: int = 64

    class FakeLLM:
        def __init__(self, target, speculative_config=None, **kw):
            self.name = "spec" if speculative_config else "plain"
            self.engine = SimpleNamespace(scheduler=SimpleNamespace(config=Config()))
            engines.append(self)

        def chat(self, prompts, params):
            calls.append((self.name, [p[0]["content"] for p in prompts], self.engine.scheduler.config.max_num_seqs))
            return fake_outputs(prompts)

        def close(self):
            pass

    monkeypatch.setattr(deepinfer_core, "LLM", FakeLLM)
    monkeypatch.setitem(bench.paired_rows.__globals__, "proposer_state", lambda llm, c: "")
    args = SimpleNamespace(target="t", max_tokens=4, step_log=None, step_times=False, concurrency=[2], closed_loop=2,
                           prompt_sets=2, interleave=2, out=None, profile=None, torch_profile=None, profile_at=[],
                           warmup_calls=1)
    pool = [[{"role": "user", "content": str(i)}] for i in range(8)]
    bench.run_interleaved({"none": None, "confidence": {"method": "dspark"}}, args, {}, pool)
    first_set, second_set = [str(i) for i in range(4)], [str(i) for i in range(4, 8)]
    assert calls[:2] == [("plain", first_set, 2), ("spec", first_set, 2)]   # the warm-ups, capped at C
    measured = calls[2:]
    assert len(measured) == 4 and all(cap == 2 for _, _, cap in measured)
    assert [prompts for _, prompts, _ in measured] == [first_set, first_set, second_set, second_set]
    assert [llm.engine.scheduler.config.max_num_seqs for llm in engines] == [64, 64]   # the cap lifted after


@pytest.mark.parametrize("rotate,order", [(0, ["a", "b", "c"]), (1, ["b", "c", "a"]), (5, ["c", "a", "b"])])
def test_build_rotate_changes_the_construction_order_only(benchmark_script, monkeypatch, capsys, rotate, order) -> None:
    """`--build-rotate N` (session 84) builds the engines from variant N on (mod their count); the
    rounds, warm-ups and tables keep `--variants`' order."""
    from types import SimpleNamespace

    import deepinfer_core

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    made, chats = [], []

    class FakeLLM:
        def __init__(self, target, speculative_config=None, **kw):
            self.name = speculative_config["name"]
            made.append(self.name)

        def chat(self, prompts, params):
            chats.append(self.name)
            return fake_outputs(prompts)

        close = staticmethod(lambda: None)

    monkeypatch.setattr(deepinfer_core, "LLM", FakeLLM)
    monkeypatch.setitem(bench.paired_rows.__globals__, "proposer_state", lambda llm, c: "")
    args = dict(target="t", max_tokens=4, step_log=None, step_times=False, concurrency=[1], closed_loop=0,
                prompt_sets=1, interleave=1, out=None, profile=None, torch_profile=None, profile_at=None,
                build_rotate=rotate)
    bench.run_interleaved({n: {"name": n} for n in "abc"}, SimpleNamespace(**args), {},
                          [[{"role": "user", "content": "x"}]])
    assert made == order and f"built in order: {', '.join(order)}" in capsys.readouterr().out
    assert chats[:3] == ["a", "b", "c"]   # (the warm-ups, in the variants' order)
