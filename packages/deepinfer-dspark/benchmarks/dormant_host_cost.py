# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The default's host work a step where drafting is ruled out, against plain decoding's and a
proposer that is always dormant (the engine's own share).

At 64 requests on the H200 the default drafted nothing in its median calls and still ran 2-6%
below plain decoding (session 50, run5). This script measures the host work that can explain
it, on this machine: a tiny target (4 layers, hidden 64, dummy weights: the host's work is a
large share of a step, as on the H200's slow host) and a random one-layer drafter, which the
confidence-scheduled default (`scheduling: confidence`, the profiles given, `measure_round_times`
off so decisions follow the profiles, not this CPU's drafter) soon rules out at every load.
Greedy batches of `--concurrency` prompts with reply lengths drawn from 16-`--max-tokens`
(`ignore_eos`: requests finish one by one, as chat replies do), the engines alive at once and
their calls alternated in rotated order; the first `--warmup` calls of each engine are not
counted (the default judges the loads there). Printed per engine: the median over calls of the
host microseconds a step outside the model's forward (`execute_model`), its difference to plain
decoding's, and (for the default) the calls its proposer heard a step, by name.

Engines: `none` (plain decoding), `stub` (the same speculative engine over a proposer that
declares every step dormant and does nothing: the engine's side of a dormant step), `default` and
`alone` (the default without its prompt-lookup wrapper: `prompt_lookup_min` 0), `quarter` (the default with a
quarter of the wrapper's search budget, `confidence-search-quarter`: its stretches 4x as long at 8 requests;
session 75), and `none-again` (plain decoding once more, built alike: the noise floor of the timed rows; session 60).
`--by-running` adds the median host microseconds a step by the requests running as it began:
where in a batch's drain an engine's host work goes (a step of a prompt-lookup round counts
as any step: its work is a drafted step's, not overhead). A call's prefill step is filed under
0 (nothing runs before it is admitted); in a closed loop a step that admits a request is filed
with the decode steps at the count before it.
`--calls` times, for each speculative engine, what a step of it runs that plain decoding's does not:
the proposer's calls (`ASKED`, outer calls only: a wrapper's include DSpark's) and the engine's
own side (`SpeculativeDecoder.track` / `forget` / `remove`, core's `DormantSteps.step` / `ran` /
`settle`: these include the proposer calls made inside them), in calls and microseconds a step
and microseconds a call, over the measured calls. Session 57 read it at 128 requests: where a
step's host work over plain decoding's goes. The rows nest (`decoder.forget` holds `proposer.remove`,
`dormant.step` holds `dormant.settle` and the proposer's asks): they do not add up. Each timer costs
~0.3 us a call, which the engines' rows of the first table then carry too (several calls a step):
read that table from a run without `--calls`.
`--count-calls` adds, after the warm-up calls (at least one: an engine's first call carries the process's
one-time work) and before the measured ones, one more call of each engine (the first measured prompt set)
under `cProfile`: the Python function calls of the whole call (builtins included; the timers' own wrappers
alike in every engine) over its steps, against plain decoding's. A count, not a time: for plain decoding and
the stub it repeats exactly run after run (session 58: on a busy 2-core host the timed rows moved by +-150 us
a step between runs while those counts held); the default's follows its decisions, which read the clock (a
call that drafts some rounds takes fewer steps and costs more a step). That call is also one more warm-up
call for each engine, so the timed rows of a `--count-calls` run compare with each other, not with runs
without it. `--profile-dir DIR` also writes each engine's statistics (`DIR/<engine>.prof`; `profile_diff.py
--steps` takes the table's steps).
`--closed-loop M` gives each call M x C prompts with at most C running (`max_num_seqs`), the next
admitted as one finishes (`bench_dspark.py --closed-loop`), so the count stays at C until the
call's last replies.

Usage (repository root; profiles as `bench_dspark.py --save-sps DIR/sps_batch.json` writes them):
    python3 packages/deepinfer-dspark/benchmarks/dormant_host_cost.py \
        --profiles benchmarks/results/h200-2026-12-05/run2/high --concurrency 64 --rounds 8
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from bench_paused import random_drafter, scratch_dir
from bench_variants import AlwaysDormant
from engine_host_cost import Clock
from gc_passes import TARGET, prompts

ENGINES = ("none", "none-again", "stub", "default", "alone", "quarter")
ASKED = ("dormant_rounds", "dormant_floor", "dormant_passed", "quiet_rounds", "quiet_passed", "wants_features",
         "idle_rounds", "idle_round", "propose", "observe_step", "track", "remove")


class Timed:
    """Seconds in `engine.step` and in `runner.execute_model` since the last `take`
    (`engine_host_cost.Clock`); with `by_running`, also each step's host microseconds outside
    the forward under the number of requests running as it began (`running`, filled while `on`)."""

    def __init__(self, llm, by_running: bool = False) -> None:
        self.clock = Clock()
        self.running: dict[int, list[float]] = defaultdict(list)
        self.on = False
        step = self.clock.timed(llm.engine.step, "step")
        if by_running:
            engine, seconds = llm.engine, self.clock.seconds

            def by_count(*args, timed=step, **kwargs):   # (the clock's sums read around the timed step)
                count, before = len(engine.scheduler.running), seconds["step"] - seconds["forward"]
                out = timed(*args, **kwargs)
                if self.on:
                    self.running[count].append(1e6 * (seconds["step"] - seconds["forward"] - before))
                return out
            step = by_count
        llm.engine.step = step
        llm.engine.runner.execute_model = self.clock.timed(llm.engine.runner.execute_model, "forward")

    def take(self) -> float:
        """Host microseconds a step outside the forward since the last call (then zero)."""
        seconds, steps = self.clock.seconds, max(self.clock.calls["step"], 1)
        us = 1e6 * (seconds["step"] - seconds["forward"]) / steps
        self.clock.clear()
        return us


def by_running_table(running: dict[str, dict[int, list[float]]]) -> str:
    """Markdown: per running count (rows) the median host us a step of each engine (columns),
    and its steps; "-" where an engine ran no step at that count."""
    names = list(running)
    counts = sorted({n for per in running.values() for n in per})
    lines = ["| running | " + " | ".join(f"{name} (steps)" for name in names) + " |",
             "|---:|" + "---:|" * len(names)]
    for n in counts:
        cells = [f"{statistics.median(running[name][n]):.1f} ({len(running[name][n])})" if running[name].get(n)
                 else "-" for name in names]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def count_calls(proposer, counts: Counter) -> None:
    """Counts `proposer`'s calls by name in `counts` (wrapping its methods on the instance)."""
    for name in ASKED:
        fn = getattr(proposer, name, None)
        if fn is None:
            continue

        def counted(*args, fn=fn, name=name, **kwargs):
            counts[name] += 1
            return fn(*args, **kwargs)
        object.__setattr__(proposer, name, counted)   # (past a wrapper's forwarding)


ENGINE_SIDE = {"decoder": ("track", "forget", "remove"), "dormant": ("step", "ran", "settle")}


def time_calls(llm, clock: Clock) -> None:
    """Times a speculative engine's proposer calls (`ASKED`) and its own side (`ENGINE_SIDE`) on
    `clock`, named `proposer.X`, `decoder.X`, `dormant.X`; core's `DormantSteps` is re-read so
    that it holds the timed proposer methods (call between engine calls: no stretch is open)."""
    decoder = llm.engine.speculative
    proposer = decoder.proposer
    for name in ASKED:
        fn = getattr(proposer, name, None)
        if fn is not None:
            object.__setattr__(proposer, name, clock.timed(fn, f"proposer.{name}"))   # (past a wrapper's forwarding)
    decoder.dormant.__init__(proposer)
    for owner, names in ENGINE_SIDE.items():
        target = decoder if owner == "decoder" else decoder.dormant
        for name in names:
            setattr(target, name, clock.timed(getattr(target, name), f"{owner}.{name}"))


def calls_table(clock: Clock, steps: int) -> str:
    """Markdown: per timed name, calls a step, us a step and us a call, most costly first."""
    lines = ["| call | calls a step | us a step | us a call |", "|---|---:|---:|---:|"]
    for name, seconds in sorted(clock.seconds.items(), key=lambda item: -item[1]):
        calls = clock.calls[name]
        lines.append(f"| {name} | {calls / steps:.3f} | {1e6 * seconds / steps:.2f} | {1e6 * seconds / calls:.2f} |")
    return "\n".join(lines)


def count_calls_a_step(llm, timer: Timed, batch: list, params: list, dump: Path | None = None) -> tuple[float, int]:
    """(Python function calls a step, steps) of one `generate(batch, params)` call: cProfile's count
    over the whole call (builtins included) divided by its engine steps; `dump` gets the call's
    statistics (`pstats` format)."""
    timer.take()
    profile = cProfile.Profile()
    profile.enable()
    try:
        llm.generate(batch, params)
    finally:
        profile.disable()
    steps = max(timer.clock.calls["step"], 1)
    timer.take()
    if dump is not None:
        profile.dump_stats(str(dump))
    return pstats.Stats(profile).total_calls / steps, steps


def count_table(counts: dict[str, tuple[float, int]]) -> str:
    """Markdown: per engine (name -> (calls a step, steps)), calls a step, the difference to plain
    decoding's (`none`; "-" without it), also in %, and the call's steps (`profile_diff.py --steps`)."""
    base = counts["none"][0] if "none" in counts else None
    lines = ["| engine | Python calls a step | over plain decoding | steps |", "|---|---:|---:|---:|"]
    for name, (value, steps) in counts.items():
        over = "-" if not base else f"{value - base:+.1f} ({100 * (value - base) / base:+.2f}%)"
        lines.append(f"| {name} | {value:.1f} | {over} | {steps} |")
    return "\n".join(lines)


def build(engines, profiles: Path, concurrency: int) -> dict:
    """The engines by name, over one tiny target and random drafter."""
    from deepinfer_core import LLM

    from deepinfer_dspark.sps import SPSProfile

    target = scratch_dir("dormant-host-target-")
    (target / "config.json").write_text(json.dumps(TARGET))
    drafter = str(random_drafter(target, 7, scratch_dir("dspark-random-")))
    dspark = {"method": "dspark", "model": drafter, "num_speculative_tokens": 7, "scheduling": "confidence",
              "sps_profile": SPSProfile.load(profiles / "spec_sps_batch.json"),
              "decode_profile": SPSProfile.load(profiles / "sps_batch.json"), "measure_round_times": False}
    llms = {}
    configs = {"none": None, "none-again": None, "alone": {**dspark, "prompt_lookup_min": 0}}
    for name in engines:
        llms[name] = LLM(str(target), speculative_config=configs.get(name, dspark), load_format="dummy",
                         dtype="float32", max_model_len=512, block_size=16, kv_cache_memory=1 << 30, seed=11,
                         max_num_seqs=concurrency)
        if name == "quarter":   # (session 75: the wrapper's own attribute, as bench_variants sets it)
            llms[name].engine.speculative.proposer.search_budget = 0.25
        if name == "stub":
            decoder = llms[name].engine.speculative
            decoder.proposer = AlwaysDormant()
            decoder.dormant.__init__(decoder.proposer)   # (core's `DormantSteps` holds the methods it found)
    return llms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", type=Path, required=True, help="folder with sps_batch.json, spec_sps_batch.json")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=128, help="the longest reply (replies: 16 to this)")
    parser.add_argument("--rounds", type=int, default=8, help="measured calls per engine")
    parser.add_argument("--warmup", type=int, default=3, help="calls per engine not measured")
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--calls", action="store_true",
                        help="also time each speculative engine's proposer calls and its own side (measured calls)")
    parser.add_argument("--closed-loop", type=int, default=0, metavar="M",
                        help="M x C prompts a call, at most C running (0: C prompts a call)")
    parser.add_argument("--by-running", action="store_true",
                        help="also the median host us a step by requests running as it began (measured calls)")
    parser.add_argument("--count-calls", action="store_true",
                        help="also one more call an engine under cProfile: Python calls a step over plain decoding")
    parser.add_argument("--profile-dir", type=Path, default=None,
                        help="with --count-calls: write DIR/<engine>.prof (read with profile_diff.py)")
    args = parser.parse_args()
    if args.concurrency < 1 or args.max_tokens < 16 or args.rounds < 1 or args.warmup < 0 or args.closed_loop < 0:
        parser.error("--concurrency, --rounds: must be >= 1; --max-tokens: >= 16; --warmup, --closed-loop: >= 0")
    if args.profile_dir is not None and not args.count_calls:
        parser.error("--profile-dir: needs --count-calls")
    if args.count_calls and args.warmup < 1:
        parser.error("--count-calls: needs --warmup >= 1 (an engine's first call carries one-time work)")
    from deepinfer_core import SamplingParams

    llms = build(args.engines, args.profiles, args.concurrency)
    timers = {name: Timed(llm, args.by_running) for name, llm in llms.items()}
    calls: Counter = Counter()
    rng = random.Random(3)
    size = args.concurrency * max(args.closed_loop, 1)   # prompts a call
    params = [SamplingParams(temperature=0, max_tokens=rng.randint(16, args.max_tokens), ignore_eos=True)
              for _ in range(size)]
    pool = prompts(size * (args.warmup + args.rounds), seed=5)
    host: dict[str, list[float]] = {name: [] for name in llms}
    steps = 0
    clocks = {name: Clock() for name, llm in llms.items() if args.calls and llm.engine.speculative is not None}
    measured_steps: Counter = Counter()
    counts: dict[str, tuple[float, int]] = {}
    for r in range(args.warmup + args.rounds):
        batch = [{"prompt_token_ids": p} for p in pool[r * size:(r + 1) * size]]
        if r == args.warmup and args.count_calls:   # (before any counter or timer wraps the proposers)
            if args.profile_dir is not None:
                args.profile_dir.mkdir(parents=True, exist_ok=True)
            counts = {name: count_calls_a_step(llm, timers[name], batch, params, None if args.profile_dir is None
                                               else args.profile_dir / f"{name}.prof") for name, llm in llms.items()}
        if r == args.warmup and "default" in llms:   # (between calls: no stretch is open)
            decoder = llms["default"].engine.speculative
            count_calls(decoder.proposer, calls)
            decoder.dormant.__init__(decoder.proposer)   # (it holds the methods it found at start)
        if r == args.warmup:
            for name, clock in clocks.items():
                time_calls(llms[name], clock)
        names = list(llms)
        for name in names[r % len(names):] + names[:r % len(names)]:   # rotated: no engine always first
            timers[name].on = r >= args.warmup
            llms[name].generate(batch, params)
            steps += timers[name].clock.calls["step"] if name == "default" and r >= args.warmup else 0
            measured_steps[name] += timers[name].clock.calls["step"] if r >= args.warmup else 0
            us = timers[name].take()
            if r >= args.warmup:
                host[name].append(us)
    base = statistics.median(host["none"]) if "none" in host else None
    form = f", closed loop of {size} a call" if args.closed_loop else ""
    print(f"{args.concurrency} requests{form}, replies of 16-{args.max_tokens} tokens, {args.rounds} calls an engine "
          f"after {args.warmup}")
    print("| engine | host us a step outside the forward (median) | over plain decoding |")
    print("|---|---:|---:|")
    for name, values in host.items():
        over = "-" if base is None else f"{statistics.median(values) - base:+.1f}"
        print(f"| {name} | {statistics.median(values):.1f} | {over} |")
    if args.by_running:
        print(by_running_table({name: timer.running for name, timer in timers.items()}))
    for name, clock in clocks.items():
        print(f"{name}: its side a step, {measured_steps[name]} measured steps")
        print(calls_table(clock, max(measured_steps[name], 1)))
    if counts:
        print("one more call an engine under cProfile, before the measured ones (their prompts):")
        print(count_table(counts))
    if calls:
        print("default's proposer, calls a step: " + ", ".join(
            f"{name} {count / steps:.3f}" for name, count in sorted(calls.items(), key=lambda item: -item[1])))


if __name__ == "__main__":
    main()
