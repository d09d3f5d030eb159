# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""SPS profiles for confidence scheduling, measured on the engine: plain decode steps and
speculative rounds per second by batch size (`deepinfer_dspark.SPSProfile`).

`measure_in_child` measures one profile in a fresh Python process: on the H200 an engine built
after others in one process ran slower (plain steps at 1 request 1.00 -> 2.07 ms over three
engines, BENCHMARKS.md sessions 12-13), which made the k = 1 round profile slower than the
k = 7 one and turned `VerifyRates`' interpolation upside down. Run as a script, this file is
that child: `python3 sps_profiles.py REQUEST.json` (written by `measure_in_child`).

Both measurements first run the engine for `warmup_seconds` and forget those steps: in a fresh
child the first seconds of drafted rounds ran 20-30% slower than later ones of the same engine
and batch size (one request: 3.19 against 2.54-2.66 ms, BENCHMARKS.md session 17; 3.51 against
2.68-2.80 ms in session 14), and a profile read at 1-2 requests from those seconds made
confidence scheduling pause where fixed-7 ran 1.2x faster than plain decoding.

`measure_paired` measures both profiles from one process's two engines, alive together, each
batch of one followed by the other's of the same size (the order alternating): the host state
that slows one side slows the other, so their ratio, which every pause decision reads, holds. On
the H200 a decode profile measured first read plain steps 11-35% slower than the benchmark's own
plain steps later in the same process, while the round profile measured after it read right, and
the default drafted losing rounds at 8 requests (BENCHMARKS.md, forty-second session, process d).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple

from engine_probes import StepTimes

if TYPE_CHECKING:
    from deepinfer_dspark.sps import SPSProfile


def _workload(prompts: list | None, b: int) -> tuple[list, bool]:
    """The batch of `b` requests a profile is measured on, and whether it is a chat batch:
    `prompts` (chat conversations, cycled) or, when None, synthetic 16-token prompts."""
    if prompts is None:
        return [{"prompt_token_ids": [1 + (i % 50)] * 16} for i in range(b)], False
    return [prompts[i % len(prompts)] for i in range(b)], True


def _timed(llm, batch: list, chat: bool, max_tokens: int) -> list:
    from deepinfer_core import SamplingParams

    params = SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True)
    run = llm.chat if chat else llm.generate
    run(batch[:1], params)  # warm-up
    return run(batch, params)


def _warm_up(llm, prompts: list | None, b: int, max_tokens: int, seconds: float, trace: StepTimes | None,
             label: str) -> None:
    """Runs batches of `b` requests until `seconds` have passed (at least one), then forgets
    their steps (`trace`), printing them: the engine's first seconds are not measured."""
    began = time.perf_counter()
    while True:
        _timed(llm, *_workload(prompts, b), max_tokens)
        if time.perf_counter() - began >= seconds:
            break
    if trace is not None:
        print(f"{label} warm-up ({time.perf_counter() - began:.1f} s, not measured): {trace.take()}", flush=True)


def _after_prefill(outs: list) -> list:
    """The requests whose first token came last (the latest tenth, at least one): every engine
    step after it decodes, so their step times hold no prefill chunk of other requests (with 256
    chat prompts the chunked prefill spans several steps and made plain steps look 1.8x slower).
    Requests that produced no token (an error, e.g. a prompt longer than --max-model-len) are
    left out; ValueError when none is left."""
    ordered = sorted((o for o in outs if o.metrics.first_token_time is not None),
                     key=lambda o: o.metrics.first_token_time)
    if not ordered:
        raise ValueError(f"profile: no request produced a token (first error: {outs[0].error if outs else None})")
    return ordered[-max(1, len(ordered) // 10):]


def measure_sps(target: str, sizes: list[int], engine_kw: dict, prompts: list | None = None,
                max_tokens: int = 33, repeats: int = 3, step_times: bool = False,
                method: str = "request", warmup_seconds: float = 5.0) -> "SPSProfile":
    """Steps per second of plain decode at each batch size (one token per request per step): the
    median of (finish - first token) / (tokens - 1) over the requests that left prefill last
    (`_after_prefill`; with `method="steps"`, the engine's median step time at exactly b requests
    running instead, see `_batch_time`), every request generating
    `max_tokens` (EOS ignored) from `prompts` (chat conversations; None: synthetic 16-token
    prompts), and the median of that over `repeats` passes over the sizes (`_measure_sizes`: one
    batch once measured 32 requests at half the rate of 16 and 64 on the H200, session 11). Real
    prompt lengths matter: attention reads the whole context every step. The engine first runs
    `warmup_seconds` of batches of the first size, not measured (`_warm_up`)."""
    from deepinfer_core import LLM

    from deepinfer_dspark.sps import SPSProfile

    llm = LLM(target, **engine_kw)
    trace = StepTimes(llm) if step_times or method == "steps" else None
    _warm_up(llm, prompts, sizes[0], max_tokens, warmup_seconds, trace, "decode profile")
    rates = _measure_sizes(llm, prompts, sizes, max_tokens, repeats, trace, "plain", method, "decode profile",
                           lambda o: len(o.outputs[0].token_ids) - 1)
    llm.close()
    how = f"decode steps, {max_tokens} tokens, " + ("chat prompts" if prompts else "16-token prompts")
    return SPSProfile(sizes, rates, {"target": target,
                                     "method": f"{how}, {method} times, {warmup_seconds:g} s warm-up"})


def measure_spec_sps(target: str, drafter: str, k: int, sizes: list[int], engine_kw: dict,
                     prompts: list | None = None, max_tokens: int = 33, repeats: int = 3,
                     step_times: bool = False, method: str = "request",
                     warmup_seconds: float = 5.0) -> "SPSProfile":
    """Steps per second of SPECULATIVE rounds (draft k + verify k) at batch tokens b * (k + 1):
    the cost confidence scheduling must weigh against plain decoding (`measure_sps`); the median
    of (finish - first token) / rounds over the requests that left prefill last (or, with
    `method="steps"`, the median drafted step at exactly b requests), on the workload of
    `measure_sps`, and the median of that over `repeats` passes over the sizes, after `warmup_seconds` of
    batches of the first size, not measured (`_warm_up`)."""
    from deepinfer_core import LLM

    from deepinfer_dspark.sps import SPSProfile

    llm = LLM(target, speculative_config={"method": "dspark", "model": drafter, "num_speculative_tokens": k},
              **engine_kw)
    trace = StepTimes(llm) if step_times or method == "steps" else None
    _warm_up(llm, prompts, sizes[0], max_tokens, warmup_seconds, trace, f"k={k} profile")
    rates = _measure_sizes(llm, prompts, sizes, max_tokens, repeats, trace, "drafted", method, f"k={k} profile",
                           lambda o: o.metrics.spec_rounds)
    tokens = [b * (k + 1) for b in sizes]
    llm.close()
    how = f"dspark rounds, k={k}, {max_tokens} tokens, " + ("chat prompts" if prompts else "16-token prompts")
    return SPSProfile(tokens, rates, {"target": target, "drafter": drafter,
                                      "method": f"{how}, {method} times, {warmup_seconds:g} s warm-up"})


def measure_paired(target: str, drafter: str, k: int, sizes: list[int], engine_kw: dict,
                   prompts: list | None = None, max_tokens: int = 33, repeats: int = 3,
                   step_times: bool = False, method: str = "request",
                   warmup_seconds: float = 5.0) -> "tuple[SPSProfile, SPSProfile]":
    """`measure_sps` and `measure_spec_sps` together: both engines built and warmed up (the plain
    one first), then each size's plain and speculative batches measured back to back in every
    pass (`_measure_arms`), so a spell of the host falls on both profiles' batches of that size.
    Returns (decode profile, speculative round profile), each as the single measurement returns
    it, with "paired" in its `meta["method"]`."""
    from deepinfer_core import LLM

    from deepinfer_dspark.sps import SPSProfile

    plain = LLM(target, **engine_kw)
    spec = LLM(target, speculative_config={"method": "dspark", "model": drafter, "num_speculative_tokens": k},
               **engine_kw)
    traced = step_times or method == "steps"
    arms = [Arm(plain, StepTimes(plain) if traced else None, "plain", "decode profile",
                lambda o: len(o.outputs[0].token_ids) - 1),
            Arm(spec, StepTimes(spec) if traced else None, "drafted", f"k={k} profile",
                lambda o: o.metrics.spec_rounds)]
    for arm in arms:
        _warm_up(arm.llm, prompts, sizes[0], max_tokens, warmup_seconds, arm.trace, arm.label)
    decode_rates, spec_rates = _measure_arms(arms, prompts, sizes, max_tokens, repeats, method)
    plain.close()
    spec.close()
    workload = f"{max_tokens} tokens, " + ("chat prompts" if prompts else "16-token prompts")
    how = f"{method} times, {warmup_seconds:g} s warm-up, paired with the other profile's batches"
    decode = SPSProfile(sizes, decode_rates, {"target": target, "method": f"decode steps, {workload}, {how}"})
    rounds = SPSProfile([b * (k + 1) for b in sizes], spec_rates,
                        {"target": target, "drafter": drafter, "method": f"dspark rounds, k={k}, {workload}, {how}"})
    return decode, rounds


class Arm(NamedTuple):
    """One engine measured by `_measure_arms`: its steps' `kind` in `trace` ("plain" or "drafted"),
    its printed `label` and `steps_of(output)`, the steps (or rounds) a request's decode took."""
    llm: object
    trace: StepTimes | None
    kind: str
    label: str
    steps_of: Callable


def _measure_sizes(llm, prompts: list | None, sizes: list[int], max_tokens: int, repeats: int,
                   trace: StepTimes | None, kind: str, method: str, label: str, steps_of) -> list[float]:
    """Steps per second of one engine at each of `sizes` (`_measure_arms` with one arm)."""
    return _measure_arms([Arm(llm, trace, kind, label, steps_of)], prompts, sizes, max_tokens, repeats, method)[0]


def _measure_arms(arms: list[Arm], prompts: list | None, sizes: list[int], max_tokens: int, repeats: int,
                  method: str) -> list[list[float]]:
    """Steps per second of each arm's engine at each of `sizes`, measured in `repeats` passes over
    all the sizes (not `repeats` batches of one size, then the next: on the H200 a slow spell of the
    host covered all three batches of 32 requests once, and the plain step read 1.65 ms there against
    1.43 at 64 and 1.15 in the benchmark that followed, session 24), each pass one batch per size and
    arm, the arms of one size back to back, the first of them rotating over passes and sizes; a size's rate is
    1 / the median over passes of that batch's time per step (`_batch_time`). Returns one list of
    rates per arm, in `sizes`' order."""
    times: list[dict[int, list[float]]] = [{b: [] for b in sizes} for _ in arms]
    for p in range(max(repeats, 1)):
        for j, b in enumerate(sizes):
            for i in range(len(arms)):
                a = (p + j + i) % len(arms)   # a size's first arm changes from pass to pass
                arm = arms[a]
                outs = _timed(arm.llm, *_workload(prompts, b), max_tokens)
                request_time = statistics.median((o.metrics.finished_time - o.metrics.first_token_time)
                                                 / max(arm.steps_of(o), 1) for o in _after_prefill(outs))
                times[a][b].append(_batch_time(request_time, arm.trace, b, arm.kind, method))
                if arm.trace is not None:
                    print(f"{arm.label} at {b}: {1e3 * times[a][b][-1]:.2f} ms; {arm.trace.take()}", flush=True)
    rates = [[1.0 / statistics.median(t[b]) for b in sizes] for t in times]
    for arm, t, arm_rates in zip(arms, times, rates):
        for b, rate in zip(sizes, arm_rates):
            print(f"{arm.label} at {b}: {rate:.1f} steps/s ({1e3 / rate:.2f} ms; passes "
                  f"{', '.join(f'{1e3 * x:.2f}' for x in t[b])} ms)", flush=True)
    return rates


def _batch_time(request_time: float, trace: StepTimes | None, b: int, kind: str, method: str) -> float:
    """One batch's seconds per step at `b` requests: the median request time per step
    (`method="request"`), or the engine's median `kind` step at exactly b requests running in
    that batch (`"steps"`: what a decision compares, whatever the requests' own timelines; on
    the H200 the request times of 8 requests whose drafts were all accepted mixed rounds of 2-8
    requests, BENCHMARKS.md session 12, run 8). With fewer than 5 such steps, the request time."""
    if method == "steps":
        median = trace.median(b, kind) if trace is not None else None
        if median is not None:
            return median
        print(f"profile at {b}: fewer than 5 {kind} steps ran {b} requests; the request times are used", flush=True)
    return request_time


def measure_in_child(kind: str, params: dict):
    """`measure_sps(**params)` (kind "decode"), `measure_spec_sps(**params)` ("spec") or
    `measure_paired(**params)` ("paired": returns both profiles) in a fresh Python process (see
    the module docstring), which prints to this process's stdout; its stderr is shown only when
    it fails.

    Raises:
        ValueError: an unknown `kind`.
        RuntimeError: the child failed (its exit status and the end of its stderr).
    """
    from deepinfer_dspark.sps import SPSProfile

    if kind not in ("decode", "spec", "paired"):
        raise ValueError(f"kind: 'decode', 'spec' or 'paired', got {kind!r}")
    with tempfile.TemporaryDirectory() as tmp:
        request, out = Path(tmp) / "request.json", Path(tmp) / "profile.json"
        request.write_text(json.dumps({"kind": kind, "params": params, "out": str(out)}))
        sys.stdout.flush()   # the child's lines follow ours, as it prints them (lost otherwise if it is killed)
        child = subprocess.run([sys.executable, __file__, str(request)], text=True, stderr=subprocess.PIPE,
                               check=False)
        if child.returncode != 0 or not out.is_file():
            raise RuntimeError(f"{kind} profile: the child process failed (exit {child.returncode}):\n"
                               f"{child.stderr[-3000:]}")
        if kind == "paired":
            return SPSProfile.load(out), SPSProfile.load(out.with_name("spec_" + out.name))
        return SPSProfile.load(out)


def _child(request_path: str) -> None:
    request = json.loads(Path(request_path).read_text())
    out = Path(request["out"])
    if request["kind"] == "paired":   # the speculative profile first: the decode one marks success
        decode, rounds = measure_paired(**request["params"])
        rounds.save(out.with_name("spec_" + out.name))
        decode.save(out)
        return
    measure = measure_sps if request["kind"] == "decode" else measure_spec_sps
    measure(**request["params"]).save(out)


if __name__ == "__main__":
    _child(sys.argv[1])
