# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/step_log_report.py`: per-engine totals and step-by-step differences from `none`
over a hand-made step log (the numbers are worked out below)."""

from __future__ import annotations

import gzip
import json
import lzma

import pytest


@pytest.fixture
def report(benchmark_script):
    return benchmark_script("step_log_report")


def step(engine, rnd, number, ms, running=2, prefill=0, kind="plain"):
    return dict(engine=engine, concurrency=2, round=rnd, step=number, running=running, kind=kind, ms=ms,
                buffered=0, scheduled=2, prefill_tokens=prefill, verifying=0)


def test_summary_and_matched_steps(report, tmp_path) -> None:
    rows = []
    for rnd in (0, 1):   # none: a 10 ms prefill step, then two 1.0 ms decode steps
        rows += [step("none", rnd, 0, 10.0, running=0, prefill=20), step("none", rnd, 1, 1.0),
                 step("none", rnd, 2, 1.0)]
    # paused: the same schedule, prefill +0.5 ms, decode +0.1 and +0.3 ms
    for rnd in (0, 1):
        rows += [step("paused", rnd, 0, 10.5, running=0, prefill=20), step("paused", rnd, 1, 1.1),
                 step("paused", rnd, 2, 1.3)]
    # drafted: its second step is a drafted round (another schedule: not matched)
    rows += [step("drafted", 0, 0, 10.0, running=0, prefill=20), step("drafted", 0, 1, 3.0, kind="drafted")]
    path = tmp_path / "steps.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(json.dumps(r) for r in rows) + "\n")
    loaded = report.load(path)
    assert loaded == rows
    xz = tmp_path / "steps.jsonl.xz"   # the committed logs' compression since session 47
    with lzma.open(xz, "wt") as f:
        f.write("\n".join(json.dumps(r) for r in rows) + "\n")
    assert report.load(xz) == rows
    with pytest.raises(lzma.LZMAError):   # a gzip file under the xz suffix is not read as text
        report.load(path.rename(tmp_path / "gz_as.xz"))
    by = {s["engine"]: s for s in report.summary(loaded)}
    assert by["none"]["calls"] == 2 and by["none"]["ms_per_call"] == pytest.approx(12.0)
    assert by["paused"]["plain_mean_ms"] == pytest.approx(1.2) and by["paused"]["first_ms"] == pytest.approx(10.5)
    assert by["drafted"]["drafted_per_call"] == 1 and by["drafted"]["drafted_ms_per_call"] == pytest.approx(3.0)
    m = {e["engine"]: e for e in report.matched(loaded)}
    assert m["paused"]["decode_steps"] == 4 and m["paused"]["decode_median_ms"] == pytest.approx(0.2)
    assert m["paused"]["decode_ms_per_call"] == pytest.approx(0.4)
    assert m["paused"]["prefill_median_ms"] == pytest.approx(0.5) and m["paused"]["mismatched"] == 0
    assert m["drafted"]["mismatched"] == 1 and m["drafted"]["prefill_steps"] == 1


def test_rounds_split_each_call_by_kind_of_step(report) -> None:
    rows = [step("paused", 0, 0, 10.0, running=0, prefill=20), step("paused", 0, 1, 1.0),
            step("paused", 0, 2, 1.2), step("paused", 0, 3, 5.0), step("paused", 0, 4, 3.0, kind="drafted+flush")]
    rows[2]["buffered"] = 4
    (r,) = report.rounds(rows)   # median plain decode step 1.2 ms: 5.0 is a spike (> 1.8 x 1.2), 1.0 and 1.2 not
    assert (r["engine"], r["round"], r["steps"], r["buffered"]) == ("paused", 0, 5, 1)
    assert r["prefill"] == pytest.approx(10.0) and r["drafted"] == pytest.approx(3.0)
    assert r["spikes"] == pytest.approx(5.0) and r["decode"] == pytest.approx(2.2)
    assert r["outside"] is None                  # a log from before `call_ms`
    rows[0]["call_ms"] = 26.5                    # the call's wall time: 20.2 ms of steps
    (r,) = report.rounds(rows)
    assert r["outside"] == pytest.approx(6.3)
    assert r["captured"] is None and r["dormant"] is None   # a log from before session 51
    for row, features, stretch in zip(rows, (1, 1, 0, 0, 1), ("", "q", "d", "d", "")):
        row["features"], row["stretch"] = features, stretch
    (r,) = report.rounds(rows)
    assert (r["captured"], r["dormant"]) == (3, 3)


def test_bench_writes_the_call_wall_time_on_the_first_step(benchmark_script, tmp_path, monkeypatch) -> None:
    from pathlib import Path
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))   # its neighbours
    bench = benchmark_script("bench_dspark")
    path = tmp_path / "steps.jsonl"
    log = [dict(running=2, kind="plain", ms=1.0), dict(running=2, kind="plain", ms=2.0)]
    bench.append_steps(path, log, "none", 2, 0, 0.0042)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[0]["call_ms"] == pytest.approx(4.2) and "call_ms" not in rows[1] and log == []
    assert "harness_ms" not in rows[0]
    log = [dict(running=2, kind="plain", ms=1.0), dict(running=2, kind="plain", ms=2.0)]
    bench.append_steps(path, log, "none", 2, 1, 0.0042, 0.0007)   # the harness's own 0.7 ms in the call
    rows = [json.loads(line) for line in path.read_text().splitlines()][2:]
    assert rows[0]["harness_ms"] == pytest.approx(0.7) and "harness_ms" not in rows[1]


def test_paired_rows_take_each_calls_harness_time(benchmark_script, monkeypatch) -> None:
    """With `traces`, each engine's harness seconds are taken after every call (so one call's
    never lands in the next's) and its row reports their median (`harness ms`)."""
    from pathlib import Path
    from types import SimpleNamespace
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")

    class Trace:
        def __init__(self, per_call: float) -> None:
            self.per_call, self.pending = per_call, 0.0

        def take_harness(self) -> float:
            seconds, self.pending = self.pending, 0.0
            return seconds

    class Fake:
        def __init__(self, trace: Trace) -> None:
            self.trace, self.engine = trace, SimpleNamespace(speculative=SimpleNamespace(proposer=None))

        def chat(self, prompts, params):
            self.trace.pending += self.trace.per_call
            metrics = SimpleNamespace(arrival_time=0.0, finished_time=1.0, spec_rounds=0, spec_verified=0,
                                      spec_accepted=0)
            return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1] * 4)], metrics=metrics)]

    traces = {"none": Trace(0.001), "confidence": Trace(0.003)}
    rows = bench.paired_rows({name: Fake(t) for name, t in traces.items()}, ["p"], None, 3, 1, traces=traces)
    assert [r[2]["harness ms"] for r in rows] == [pytest.approx(1.0), pytest.approx(3.0)]
    assert "harness ms" not in bench.paired_rows({"none": Fake(Trace(0.0))}, ["p"], None, 2, 1)[0][2]


def test_paired_ratios_come_from_untraced_rounds(benchmark_script, monkeypatch, tmp_path, capsys) -> None:
    """`log_every` 2: rounds 0, 2, 4 run traced and logged, 1, 3 with the harness off; `paired`
    and the median call come from the untraced rounds, `paired traced` from the others (here the
    harness makes the traced calls of the engine with more steps 2x slower: its traced ratio
    reads 2x, its untraced 1x)."""
    from pathlib import Path
    from types import SimpleNamespace
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    clock = [0.0]
    monkeypatch.setattr(bench.paired_rows.__globals__["time"], "perf_counter", lambda: clock[0])

    class Trace:
        def __init__(self) -> None:
            self.active, self.log = True, []

        def take_harness(self) -> float:
            assert self.active   # (taken only after traced calls)
            return 0.5

    class Fake:
        def __init__(self, trace: Trace, slow_traced: bool) -> None:
            self.trace, self.slow = trace, slow_traced
            self.engine = SimpleNamespace(speculative=SimpleNamespace(proposer=None))
            self.seen = []

        def chat(self, prompts, params):
            self.seen.append(self.trace.active)
            clock[0] += 2.0 if self.slow and self.trace.active else 1.0
            if self.trace.active:
                self.trace.log.append({"running": 1, "kind": "plain", "ms": 1.0})
            metrics = SimpleNamespace(arrival_time=0.0, finished_time=1.0, spec_rounds=0, spec_verified=0,
                                      spec_accepted=0)
            return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1] * 4)], metrics=metrics)]

    traces = {"none": Trace(), "fixed": Trace()}
    llms = {"none": Fake(traces["none"], True), "fixed": Fake(traces["fixed"], False)}
    logs = {name: t.log for name, t in traces.items()}
    path = tmp_path / "steps.jsonl"
    rows = dict((name, row) for _, name, row in bench.paired_rows(llms, ["p"], None, 5, 1, logs, path, traces=traces,
                                                                   log_every=2))
    assert llms["none"].seen == [True, False, True, False, True] and all(t.active for t in traces.values())
    assert "1 of 2 orders" in capsys.readouterr().out   # 2 engines, M = 2: the untraced rounds share one order
    assert rows["fixed"]["paired"] == pytest.approx(1.0) and rows["fixed"]["paired traced"] == pytest.approx(2.0)
    assert rows["none"]["tok/s"] == pytest.approx(4.0)   # (the median of all five calls: 2.0)
    assert rows["fixed"]["harness ms"] == pytest.approx(500.0) and rows["fixed"]["runs"] == 5
    logged = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted({row["round"] for row in logged}) == [0, 2, 4] and all("harness_ms" in row for row in logged)
    with pytest.raises(ValueError, match="log_every"):
        bench.paired_rows(llms, ["p"], None, 2, 1, log_every=0)
    with pytest.raises(ValueError, match="needs `traces`"):   # untraced steps would land in the next logged call
        bench.paired_rows(llms, ["p"], None, 2, 1, logs, path, log_every=2)

    class Boom(Fake):
        def chat(self, prompts, params):
            raise RuntimeError("engine failed")

    traces["none"].active = True
    with pytest.raises(RuntimeError):
        bench.paired_rows({"none": Fake(traces["none"], False), "fixed": Boom(traces["fixed"], False)}, ["p"], None,
                          3, 1, logs, path, traces=traces, log_every=2)
    assert all(t.active for t in traces.values())   # switched back on whatever happened


@pytest.mark.parametrize("argv, message", [(["--step-log-every", "2"], "need --step-log"),
                                           (["--step-log-ledger"], "need --step-log"),
                                           (["--step-log", "S", "--interleave", "2", "--step-log-every", "0"],
                                            "must be >= 1"),
                                           (["--step-log", "S", "--interleave", "1", "--step-log-every", "2"],
                                            "needs --interleave >= 2")])
def test_step_log_flags_are_checked(benchmark_script, monkeypatch, tmp_path, capsys, argv, message) -> None:
    from pathlib import Path
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    argv = [str(tmp_path / "s.jsonl") if a == "S" else a for a in argv]
    monkeypatch.setattr("sys.argv", ["bench_dspark.py", "--target", "t", "--drafter", "d", *argv])
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [(["--baseline", "bogus"], "--baseline: no engine 'bogus'"),
                                            (["--concurrency", "5"], "--concurrency: [5] not in the log")])
def test_bad_arguments_name_the_field(report, tmp_path, monkeypatch, capsys, extra, message) -> None:
    path = tmp_path / "steps.jsonl"
    path.write_text(json.dumps(step("none", 0, 0, 1.0)) + "\n")
    for argv in ([str(path)] + extra, [str(tmp_path / "missing.jsonl")]):
        monkeypatch.setattr("sys.argv", ["step_log_report.py"] + argv)
        with pytest.raises(SystemExit) as exit_:
            report.main()
        assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "log: no such file" in err


def test_paired_rows_report_lengths_over_every_call(benchmark_script, monkeypatch) -> None:
    """A confidence engine may draft in some calls only (session 23: its median calls were
    dormant, and the table read 0 verified drafts): the lengths pool every call's counters,
    while tok/s stays the median call's."""
    from pathlib import Path
    from types import SimpleNamespace
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")

    class Fake:
        """Calls alternately dormant and drafting (2 rounds of 7 verified; 7, then 3 accepted)."""
        def __init__(self, drafts: bool) -> None:
            self.calls, self.drafts = 0, drafts
            self.engine = SimpleNamespace(speculative=SimpleNamespace(proposer=None))

        def chat(self, prompts, params):
            self.calls += 1
            rounds = 2 if self.drafts and self.calls % 2 == 0 else 0
            metrics = SimpleNamespace(arrival_time=0.0, finished_time=1.0, spec_rounds=rounds,
                                      spec_verified=7 * rounds,
                                      spec_accepted=(7 if self.calls == 2 else 3) if rounds else 0)
            return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1] * 8)], metrics=metrics)]

    rows = bench.paired_rows({"none": Fake(False), "confidence": Fake(True)}, ["p"], None, 5, 1)
    (_, _, none), (_, _, conf) = rows
    assert none["verified/round"] == 0.0 and none["accepted len"] == 1.0
    assert conf["verified/round"] == 7.0 and conf["accepted len"] == pytest.approx((7 + 3 + 4) / 4)   # no single call's
    assert conf["runs"] == 5
    assert conf["same replies"] == 1.0 and conf["first difference"] == -1


def test_acceptance_by_reply_position(report) -> None:
    """`--acceptance`: verified and accepted drafts split by where in the reply the step ran
    (session 24: confidence's rounds at 1 request emitted half fixed-7's, on other positions or
    texts); rows of older logs, without the fields, are skipped."""
    def row(engine, reply, verified, accepted):
        return {"engine": engine, "concurrency": 1, "round": 0, "step": reply, "reply": reply, "kind": "drafted",
                "ms": 3.0, "verified": verified, "accepted": accepted}

    rows = [row("fixed-7", 5, 7, 1), row("fixed-7", 40, 7, 3), row("fixed-7", 41, 7, 5), row("fixed-7", 130, 7, 7),
            row("confidence", 33, 7, 2), row("confidence", 70, 0, 0),
            {"engine": "fixed-7", "concurrency": 1, "round": 0, "step": 9, "kind": "drafted", "ms": 3.0}]
    out = {(a["engine"], a["reply"]): a for a in report.acceptance(rows)}
    assert sorted(out) == [("confidence", "32-63"), ("fixed-7", "0-31"), ("fixed-7", "128+"), ("fixed-7", "32-63")]
    body = out[("fixed-7", "32-63")]
    assert (body["reports"], body["verified"], body["accepted"]) == (2, 14, 8)
    assert body["rate"] == pytest.approx(8 / 14) and body["per_report"] == 4.0
    assert out[("confidence", "32-63")]["per_report"] == 2.0


def test_paired_rows_rotate_prompt_sets(benchmark_script, monkeypatch) -> None:
    """`--prompt-sets`: round r chats set r % N, so one cell is not one reply."""
    from pathlib import Path
    from types import SimpleNamespace
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    seen = []

    class Echo:
        engine = SimpleNamespace(speculative=None)

        def chat(self, prompts, params):
            seen.append(prompts[0][0]["content"])
            metrics = SimpleNamespace(arrival_time=0.0, finished_time=1.0, spec_rounds=0, spec_verified=0,
                                      spec_accepted=0)
            return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1, 2])], metrics=metrics) for _ in prompts]

    sets = [[[{"role": "user", "content": f"set {i}"}]] for i in range(3)]
    bench.paired_rows({"none": Echo()}, sets, None, 5, 1)
    assert seen == ["set 0", "set 1", "set 2", "set 0", "set 1"]
    seen.clear()
    bench.paired_rows({"none": Echo()}, sets[1], None, 2, 1)   # one batch: every round
    assert seen == ["set 1", "set 1"]


def test_replies_are_compared_with_the_first_engines(benchmark_script, monkeypatch) -> None:
    """In bfloat16 a speculative engine's reply may leave plain decoding's at a near-tie: the
    table says how many replies were the same and where the others first differed."""
    from pathlib import Path
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    reference = [[[1, 2, 3, 4], [5, 6, 7]], [[1, 2, 3, 4], [5, 6, 7]]]   # 2 rounds of 2 prompts
    other = [[[1, 2, 9, 9], [5, 6, 7]], [[1, 2, 3, 4], [5, 6]]]          # differs at 2, then is cut at 2
    same = bench.same_replies(other, reference)
    assert same == {"same replies": 0.5, "first difference": 2}
    assert bench.same_replies(reference, reference) == {"same replies": 1.0, "first difference": -1}
    row = {"tok/s": 10.0, "per-user tok/s": 5.0, "verified/round": 0.0, "accepted len": 1.0, "paired": 0.9, **same}
    assert bench.table([(1, "fixed-7", row)])[-1].endswith("| 0.900 | 50% (others from token 2) |")
    row.update({"paired geomean": 0.95, "paired low": 0.8, "paired high": 1.1})   # rows from session 56 on
    assert bench.table([(1, "fixed-7", row)])[-1].endswith("| 0.900 (0.950, 0.800-1.100) | 50% (others from token 2) |")


def test_calls_tell_one_bad_call_from_a_cost_every_call_pays(report) -> None:
    """`--calls`: each engine's call time over the baseline's in the same round; one round that
    drafted long (session 25: 49 drafted rounds, +41%) is the worst, the median stays near 1."""
    def step(engine, rnd, ms, kind="plain"):
        return {"engine": engine, "concurrency": 1, "round": rnd, "step": 0, "kind": kind, "ms": ms}

    rows = [step("none", r, 10.0) for r in range(4)] + [step("none", 0, 2.0)]
    rows += [step("confidence", 0, 10.0), step("confidence", 0, 4.0, "drafted"), step("confidence", 0, 4.0, "drafted")]
    rows += [step("confidence", r, 10.0 + r / 10) for r in range(1, 4)]
    (out,) = report.calls(rows)
    assert (out["concurrency"], out["engine"], out["rounds"], out["drafting"]) == (1, "confidence", 4, 1)
    assert out["worst_round"] == 0 and out["worst_drafted"] == 2 and out["worst"] == pytest.approx(18 / 12)
    assert out["median"] == pytest.approx((1.02 + 1.03) / 2)
    assert out["mean"] == pytest.approx((18 / 12 + 1.01 + 1.02 + 1.03) / 4)


def test_prefills_group_the_joiners_steps_by_kind(report) -> None:
    # a call's first step (prefill 20) is left out; two joiner steps of none (30, 34 ms), one of
    # paused with features buffered (40 ms) and one without (31 ms)
    rows = [step("none", 0, 0, 10.0, running=0, prefill=20), step("none", 0, 1, 30.0, prefill=100),
            step("none", 0, 2, 1.0), step("none", 0, 3, 34.0, prefill=50), step("none", 0, 4, 5.0),
            step("paused", 0, 0, 10.0, running=0, prefill=20), step("paused", 0, 1, 40.0, prefill=60),
            step("paused", 0, 2, 31.0, prefill=80), step("paused", 0, 3, 19.0)]
    rows[6]["buffered"] = 3
    by = {(p["engine"], p["buffered"]): p for p in report.prefills(rows)}
    assert set(by) == {("none", False), ("paused", True), ("paused", False)}
    none = by[("none", False)]
    assert (none["steps"], none["kind"]) == (2, "plain")
    assert none["median_ms"] == pytest.approx(32.0) and none["tokens"] == pytest.approx(75.0)
    assert none["share"] == pytest.approx(64.0 / 80.0)
    buffered = by[("paused", True)]
    assert buffered["median_ms"] == pytest.approx(40.0) and buffered["share"] == pytest.approx(0.4)
    assert by[("paused", False)]["tokens"] == pytest.approx(80.0)


def test_plain_steps_split_by_buffered_features(report) -> None:
    rows = [step("paused", 0, 0, 10.0, running=0, prefill=20), step("paused", 0, 1, 1.3), step("paused", 0, 2, 1.5),
            step("paused", 0, 3, 1.0), step("paused", 0, 4, 3.0, kind="drafted"), step("paused", 0, 5, 30.0, prefill=9),
            step("none", 0, 0, 10.0, running=0, prefill=20), step("none", 0, 1, 1.1)]
    rows[1]["buffered"] = rows[2]["buffered"] = 2
    by = {(p["engine"], p["buffered"]): p for p in report.plain_steps(rows)}
    assert set(by) == {("paused", True), ("paused", False), ("none", False)}
    assert by[("paused", True)]["steps"] == 2 and by[("paused", True)]["median_ms"] == pytest.approx(1.4)
    assert by[("paused", False)]["steps"] == 1 and by[("paused", False)]["median_ms"] == pytest.approx(1.0)


def test_rounds_and_plain_steps_against_the_profiles(report) -> None:
    # profiles: a round of 2 requests (k = 3: 8 tokens) 4 ms, a plain step of 2 requests 1 ms;
    # left out: a call's first step, prefill steps, a flush round, and cells with fewer steps
    from deepinfer_dspark.sps import SPSProfile

    spec, decode = SPSProfile([4, 8], [500.0, 250.0]), SPSProfile([1, 2], [1000.0, 1000.0])
    rows = [step("conf", 0, 0, 10.0, running=2, prefill=20)]
    rows += [step("conf", 0, i, 6.0, kind="drafted") for i in range(1, 6)]
    rows += [step("conf", 0, 6, 50.0, kind="drafted+flush"), step("conf", 0, 7, 30.0, kind="drafted", prefill=9)]
    rows += [step("conf", 0, i, 1.1) for i in range(8, 13)] + [step("conf", 0, 13, 1.5, running=1)]
    cells = {(a["running"], a["kind"]): a for a in report.against_profiles(rows, decode, spec, k=3)}
    assert set(cells) == {(2, "drafted"), (2, "plain")}
    drafted, plain = cells[(2, "drafted")], cells[(2, "plain")]
    assert drafted["steps"] == 5 and drafted["profile_ms"] == pytest.approx(4.0) and drafted["ratio"] == pytest.approx(1.5)
    assert plain["steps"] == 5 and plain["profile_ms"] == pytest.approx(1.0) and plain["ratio"] == pytest.approx(1.1)


def test_profile_files_by_either_name(report, tmp_path) -> None:
    """`--profiles DIR` reads sps.json / spec_sps.json, or the one sps_X.json / spec_sps_X.json
    that `bench_dspark.py --save-sps DIR/sps_X.json` writes; anything else names what it found."""
    (tmp_path / "sps_batch.json").write_text("{}")
    (tmp_path / "spec_sps_batch.json").write_text("{}")
    assert report.profile_file(tmp_path, "sps").name == "sps_batch.json"
    assert report.profile_file(tmp_path, "spec_sps").name == "spec_sps_batch.json"
    (tmp_path / "sps.json").write_text("{}")
    assert report.profile_file(tmp_path, "sps").name == "sps.json"
    (tmp_path / "spec_sps_closed.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="spec_sps_batch.json"):
        report.profile_file(tmp_path, "spec_sps")
