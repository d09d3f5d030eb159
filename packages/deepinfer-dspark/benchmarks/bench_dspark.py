# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DSpark benchmark: no speculation vs fixed length k vs confidence scheduling, by concurrency.

For each concurrency C (requests in flight = batch), the same C chat prompts (stdlib docstrings in
another shuffle than training's) are generated with greedy decoding and `max_tokens` each, by:
  none, fixed-k for k in --fixed, confidence (Algorithm 1 on the calibrated confidences and the
  measured profiles, with prompt lookup where DSpark drafts nothing) and the variants asked for by
  name, each listed with its history in `bench_variants.py`.
Counted: tokens actually emitted (`RequestOutput.outputs[*].token_ids`), wall time of the
`chat` call after one excluded warm-up call per engine (the median of at least 3 calls and 2 s);
per-user tok/s = mean over requests of tokens / (finish - arrival); mean verified / accepted
lengths from the engine's counters (with `--interleave`, over every call).

`--interleave N` keeps every variant's engine alive and, per concurrency, runs N rounds of one
call per variant (the order rotated each round); it reports each variant's median and the median
of its ratio to the first variant within a round. Run one after the other, two engines doing the
same work measured up to 30% apart on the GPU host (order and process state); paired rounds
compare them on the same state. The garbage collector's full passes run between calls, untimed
(`paired_calls.HeapOutside`; `--gc-in-calls` leaves them to the engines, inside the calls, as before
session 55), and each row also lists every round's ratio (`paired rounds`). Before each
concurrency's rounds every engine makes `--warmup-calls` excluded calls of the first prompt set
at that concurrency (session 56: one call of one prompt, as before, left the first 1-3 rounds of a
new concurrency up to 50% off on an H100, graphs and memory of the new batch size not yet warm).
Pinned to a few cores of its own (`taskset -c 2-5`, OMP_NUM_THREADS=2; session 56, run23) plain
decoding read itself mostly within 1% a round past those rounds (0.988-1.028 at 8 requests), against
0.81-1.11 unpinned. `--lockstep` runs a round's calls at once instead, one engine step at a time
in turn (`lockstep.py`; session 57: pinned GPU calls still drifted by round as a whole).

Usage (GPU machine, repository root, target GGUF or HF folder and a trained drafter folder):
    python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target T --drafter D \
        --concurrency 1 8 32 64 128 256 --fixed 1 2 3 4 5 6 7 --out $OUT/dspark.md
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import time
from pathlib import Path

from bench_variants import MIXED, NAMED, SUFFIXES, base_name, built, chosen, variant_configs, variant_engine_kw
from engine_probes import StepTimes, concurrency_cap, profile_run, proposer_state, torch_profile_run
from lockstep import engine_streams
from paired_calls import HeapOutside, _numbers, append_steps, paired_rows, same_replies  # noqa: F401 (re-exported)
from sps_profiles import measure_in_child, measure_paired, measure_sps, measure_spec_sps


def run_engine(llm, prompts: list, max_tokens: int, min_seconds: float = 2.0) -> dict:
    """One concurrency's numbers: the batch is generated at least 3 times and until `min_seconds`
    have passed (a batch of one request takes ~0.2 s), and the median run by tok/s is kept."""
    from deepinfer_core import SamplingParams

    params = SamplingParams(temperature=0, max_tokens=max_tokens)
    llm.chat(prompts[:1], params)  # warm-up, excluded
    runs, spent = [], 0.0
    while len(runs) < 3 or spent < min_seconds:
        start = time.perf_counter()
        outs = llm.chat(prompts, params)
        wall = time.perf_counter() - start
        spent += wall
        runs.append(_numbers(outs, wall))
    runs.sort(key=lambda r: r["tok/s"])
    return {**runs[len(runs) // 2], "runs": len(runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True,
                        help="target model: a GGUF file or HF folder (the engine's default model is "
                             "~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf once `deepinfer generate` ran)")
    parser.add_argument("--drafter", required=True, help="DSpark checkpoint folder (`deepinfer-dspark train --out`)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64, 128, 256])
    parser.add_argument("--fixed", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6, 7])
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--sps", default=None, help="plain-decode SPS profile JSON; measured here when absent")
    parser.add_argument("--spec-sps", default=None, help="speculative-round SPS profile JSON; measured when absent")
    parser.add_argument("--spec-sps-k1", default=None,
                        help="SPS profile JSON of speculative rounds verifying 1 draft per request (the "
                             "sps_profile_k1 of the confidence-k1 variant); measured when absent and that "
                             "variant runs")
    parser.add_argument("--sps-sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
                        help="batch sizes (requests) at which both profiles are measured, besides every "
                             "--concurrency; sizes above the largest concurrency are dropped")
    parser.add_argument("--sps-workload", choices=["chat", "synthetic"], default="chat",
                        help="what the profiles are measured on: chat prompts (another shuffle than the "
                             "benchmark's, --max-tokens each, EOS ignored) or synthetic 16-token prompts, 33 tokens")
    parser.add_argument("--sps-repeats", type=int, default=3, help="batches measured per profile size (median)")
    parser.add_argument("--sps-warmup", type=float, default=5.0, metavar="SECONDS",
                        help="each profile's engine first runs this long, not measured (its first seconds ran "
                             "20-30%% slower on the H200)")
    parser.add_argument("--sps-method", choices=["request", "steps"], default="request",
                        help="a profile point from the requests' own times (finish - first token over "
                             "steps or rounds) or from the engine's median step at exactly that many requests")
    parser.add_argument("--sps-paired", action="store_true",
                        help="measure the decode and speculative profiles together, each size's plain and "
                             "speculative batches back to back (`sps_profiles.measure_paired`: a slow spell of "
                             "the host then moves both); not with --sps or --spec-sps")
    parser.add_argument("--sps-in-process", action="store_true",
                        help="measure the profiles in this process (default: each in a fresh child process, "
                             "since later engines in one process ran slower on the H200)")
    parser.add_argument("--save-sps", type=Path, default=None,
                        help="write the plain-decode profile used here to this path, the speculative one to "
                             "spec_<name> and, when there is one, the k = 1 rounds' to spec_k1_<name>")
    parser.add_argument("--variants", nargs="+", default=None,
                        help="run only these methods, in this order: none, confidence, fixed-K (for K in "
                             "--fixed), and by name only none-again, confidence-k1, confidence-k7, "
                             "confidence-direct, confidence-measured, confidence-rounds, confidence-lookup, "
                             "confidence-full, "
                             "confidence-whole, ngram-K, ngram-aware-K (for K in --fixed); with "
                             "--no-mixed-cuda-graphs, any name with the suffix +mixed (none+mixed) is that variant "
                             "with mixed-step CUDA graphs; default none, confidence and every fixed-K")
    parser.add_argument("--prompt-sets", type=int, default=1, metavar="N",
                        help="with --interleave: round r at concurrency C chats the prompt set r %% N (C prompts "
                             "each), so a cell does not rest on C replies only (at 1 request: one reply)")
    parser.add_argument("--closed-loop", type=int, default=0, metavar="M",
                        help="with --interleave: each call chats M x C prompts with at most C running at once "
                             "(the next is admitted as one finishes: serving benchmarks' max concurrency); "
                             "0 (default): one batch of C prompts, the call lasting until its slowest reply")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--mixed-cuda-graphs", action=argparse.BooleanOptionalAction, default=None,
                        help="CUDA graphs for prefill and mixed steps (`EngineConfig.mixed_cuda_graphs`, on by "
                             "default since session 27) in every engine and profile; --no-mixed-cuda-graphs runs "
                             "them eagerly (sessions 1-26), except in variants named with the suffix +mixed")
    parser.add_argument("--deterministic", action="store_true",
                        help="batch-invariant kernels (`EngineConfig.deterministic`) in every engine and profile: "
                             "speculative replies then equal plain decoding's in bfloat16 too (without it, a "
                             "verification's shapes round differently and near-ties send replies elsewhere)")
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--out", type=Path, default=None, help="markdown table path (rewritten after every row)")
    parser.add_argument("--profile", type=Path, default=None,
                        help="append a cProfile of one more run per variant (engine thread; see --profile-at)")
    parser.add_argument("--torch-profile", type=Path, default=None,
                        help="append a torch.profiler op table (by device time) of one more run per variant "
                             "(see --profile-at)")
    parser.add_argument("--profile-at", type=int, nargs="+", default=None, metavar="C",
                        help="concurrencies of the --profile / --torch-profile runs (default: the largest)")
    parser.add_argument("--gc-in-calls", action="store_true",
                        help="with --interleave: leave the garbage collector's full passes to the engines, inside "
                             "the timed calls (before session 55; by default the harness collects between calls, "
                             "untimed: `paired_calls.HeapOutside`)")
    parser.add_argument("--interleave", type=int, default=0, metavar="N",
                        help="all engines alive at once; N rounds of one call per variant, paired ratios")
    parser.add_argument("--lockstep", action="store_true",
                        help="with --interleave: a round's calls run at once, one engine step at a time in turn "
                             "(lockstep.py: the host's drift falls on every engine alike; biased against an engine "
                             "that drafts); not with --step-log, --step-times, --closed-loop or --gc-in-calls")
    parser.add_argument("--lockstep-streams", action="store_true",
                        help="with --lockstep: each engine's calls on a CUDA stream of its own "
                             "(lockstep.engine_streams; session 57: not yet run on a GPU)")
    parser.add_argument("--build-rotate", type=int, default=0, metavar="N",
                        help="with --interleave: build the engines starting from variant N (mod their count), "
                             "then on in order (the tables keep --variants' order): over processes given "
                             "N = 0, 1, 2, ... no variant is always built first or second (session 84; the order of "
                             "construction moved plain steps by up to 1.7x in session 12)")
    parser.add_argument("--warmup-calls", type=int, default=1, metavar="N",
                        help="with --interleave: excluded calls per engine of the first prompt set before each "
                             "concurrency's rounds (0: one call of one prompt, as before session 56)")
    parser.add_argument("--kv-cache-gib", type=float, default=None,
                        help="KV cache per engine (GiB); needed with --interleave so that every engine fits")
    parser.add_argument("--budget", type=float, default=None, help="seconds: no new engine starts after this")
    parser.add_argument("--step-log", type=Path, default=None,
                        help="with --interleave: every step of every logged call (--step-log-every) as JSON "
                             "lines (engine, concurrency, round, step, requests running, kind, ms, buffered pairs, "
                             "requests scheduled, prefill tokens, requests verifying; speculative engines: forwards "
                             "that captured features, dormant/quiet stretch; a call's first row also its "
                             "call_ms and harness_ms); the file is emptied first")
    parser.add_argument("--step-log-every", type=int, default=1, metavar="M",
                        help="with --step-log: log only rounds r with r %% M == 0; the paired ratios and the "
                             "median call come from the other rounds, untraced (the harness's ~50 us a step, "
                             "on a CPU, favours engines taking fewer steps), `paired traced` from the logged ones")
    parser.add_argument("--step-log-ledger", action="store_true",
                        help="with --step-log: also the confidence proposer's pause ledgers each step (~20 us "
                             "of host time a step on a CPU, which only DSpark engines pay: their ratios read low)")
    parser.add_argument("--step-log-phases", action="store_true",
                        help="with --step-log: also each step's host ms by phase (schedule, launch, wait, resolve, "
                             "sample, update, spec, gc: `step_phases.StepPhases`; ~1 us a wrapped call, more calls "
                             "in a speculative engine): where a slow step's time went")
    parser.add_argument("--step-times", action="store_true",
                        help="print each engine's median step time by running requests, drafted or plain, "
                             "after each concurrency and each profile size (`StepTimes`; with --step-log-every, of the "
                             "logged rounds only)")
    args = parser.parse_args()
    if not math.isfinite(args.sps_warmup) or args.sps_warmup < 0:
        parser.error(f"--sps-warmup: must be a finite number of seconds >= 0, got {args.sps_warmup}")
    if args.prompt_sets < 1:
        parser.error(f"--prompt-sets: must be >= 1, got {args.prompt_sets}")
    if args.warmup_calls < 0:
        parser.error(f"--warmup-calls: must be >= 0, got {args.warmup_calls}")
    if args.closed_loop < 0 or (args.closed_loop and args.interleave <= 0):
        parser.error(f"--closed-loop: must be >= 0 and needs --interleave, got {args.closed_loop}")
    if args.lockstep and (args.interleave <= 0 or args.step_log is not None or args.step_times or args.closed_loop
                          or args.gc_in_calls):
        parser.error("--lockstep: needs --interleave, and not with --step-log, --step-times, --closed-loop or "
                     "--gc-in-calls (one engine's collection would land in its turn)")
    if args.lockstep_streams and not args.lockstep:
        parser.error("--lockstep-streams: needs --lockstep")
    known = {*NAMED, *(f"{kind}-{k}" for kind in ("fixed", "ngram", "ngram-aware") for k in args.fixed)}
    unknown = {v for v in args.variants or () if base_name(v) not in known}
    if unknown:   # before the profiles are measured (minutes)
        parser.error(f"--variants: unknown {sorted(unknown)}; choose from {sorted(known)} (each also with a "
                     f"suffix of {list(SUFFIXES)})")
    if args.mixed_cuda_graphs is not False and any(v.endswith(MIXED) for v in args.variants or ()):
        parser.error(f"--variants: the suffix {MIXED} pairs an engine with mixed-step graphs against engines "
                     f"without them, which needs --no-mixed-cuda-graphs (mixed graphs are on by default)")
    if args.sps_paired and (args.sps or args.spec_sps):
        parser.error("--sps-paired: measures both profiles, so neither --sps nor --spec-sps may be given")
    if args.step_log is not None:
        if args.interleave <= 0:
            parser.error("--step-log: needs --interleave")
    elif args.step_log_ledger or args.step_log_every != 1 or args.step_log_phases:
        parser.error("--step-log-ledger, --step-log-every, --step-log-phases: need --step-log")
    if args.step_log_every < 1:
        parser.error(f"--step-log-every: must be >= 1, got {args.step_log_every}")
    if args.step_log_every > 1 and args.interleave < 2:
        parser.error(f"--step-log-every {args.step_log_every}: needs --interleave >= 2 (an untraced round to take "
                     f"the ratios from), got {args.interleave}")
    if args.step_log is not None:
        args.step_log.write_text("")   # fails now, not after the engines start; no earlier run mixed in
    from deepinfer_core import LLM

    from deepinfer_dspark.sps import SPSProfile
    from deepinfer_dspark.train.data import build_prompts, stdlib_docstrings

    engine_kw = dict(dtype=args.dtype, max_num_seqs=max(args.concurrency), max_model_len=args.max_model_len,
                     deterministic=args.deterministic)
    if args.mixed_cuda_graphs is not None:
        engine_kw["mixed_cuda_graphs"] = args.mixed_cuda_graphs
    if args.kv_cache_gib is not None:
        engine_kw["kv_cache_memory"] = int(args.kv_cache_gib * (1 << 30))
    # Sizes above max_num_seqs would run in waves (a smaller batch than b at the end).
    sizes = sorted(b for b in set(args.sps_sizes) | set(args.concurrency) if b <= max(args.concurrency))
    # The profiles' own prompts: chat conversations from another shuffle than the benchmark's.
    profile_prompts = None if args.sps_workload == "synthetic" else [
        [{"role": "user", "content": p}] for p in build_prompts(stdlib_docstrings(max(sizes), seed=777))]
    profile_kw = dict(prompts=profile_prompts, max_tokens=33 if profile_prompts is None else args.max_tokens,
                      repeats=args.sps_repeats, step_times=args.step_times, method=args.sps_method,
                      warmup_seconds=args.sps_warmup)
    def profile(kind: str, k: int | None = None):
        params = dict(target=args.target, sizes=sizes, engine_kw=engine_kw, **profile_kw)
        if k is not None:
            params.update(drafter=args.drafter, k=k)
        if args.sps_in_process:   # later engines in one process ran slower (sps_profiles.py)
            measure = {"decode": measure_sps, "spec": measure_spec_sps, "paired": measure_paired}[kind]
            return measure(**params)
        return measure_in_child(kind, params)

    if args.sps_paired:
        decode, spec_sps = profile("paired", max(args.fixed))
    else:
        decode = SPSProfile.load(args.sps) if args.sps else profile("decode")
        spec_sps = SPSProfile.load(args.spec_sps) if args.spec_sps else profile("spec", max(args.fixed))
    # The k = 1 rounds' profile: only `confidence-k1` reads it.
    wants_k1 = any(base_name(v) == "confidence-k1" for v in args.variants or ())
    spec_k1 = SPSProfile.load(args.spec_sps_k1) if args.spec_sps_k1 else (profile("spec", 1) if wants_k1 else None)
    if args.save_sps is not None:
        decode.save(args.save_sps)
        spec_sps.save(args.save_sps.with_name("spec_" + args.save_sps.name))
        if spec_k1 is not None:
            spec_k1.save(args.save_sps.with_name("spec_k1_" + args.save_sps.name))
    # A different shuffle than training's (seed 0); the pools may still share some docstrings.
    pool = [[{"role": "user", "content": p}]
            for p in build_prompts(stdlib_docstrings(max(args.concurrency) * args.prompt_sets
                                                     * max(args.closed_loop, 1), seed=12345))]
    variants = variant_configs(args.drafter, args.fixed, spec_sps, decode, spec_k1)
    rows = []
    t0 = time.perf_counter()
    variants = chosen(variants, args.variants)
    if args.interleave > 0:
        rows = run_interleaved(variants, args, engine_kw, pool)
        print("\n".join(table(rows)))
        return
    for name, spec in variants.items():  # one engine per variant, reused across concurrencies
        if args.budget is not None and time.perf_counter() - t0 > args.budget:
            print(f"{name}: skipped (budget spent)", flush=True)
            continue
        llm = built(name, LLM(args.target, speculative_config=spec, **variant_engine_kw(name, engine_kw)))
        trace = StepTimes(llm) if args.step_times else None
        if spec is not None and llm.engine.speculative is None:
            print(f"{name}: the proposer retired at load (drafting cannot pay at any batch size under the "
                  f"measured profiles): this engine runs without speculation", flush=True)
        for c in args.concurrency:
            r = run_engine(llm, pool[:c], args.max_tokens)
            rows.append((c, name, r))
            print(c, name, {k: round(v, 2) for k, v in r.items()}, proposer_state(llm, c), flush=True)
            if trace is not None:
                print(c, name, trace.take(), flush=True)   # the warm-up call's steps included
            write_table(rows, args.out)
        for c in args.profile_at or [max(args.concurrency)]:
            if args.profile is not None:
                profile_run(llm, pool[:c], args.max_tokens, f"{name} at {c}", args.profile)
            if args.torch_profile is not None:
                torch_profile_run(llm, pool[:c], args.max_tokens, f"{name} at {c}", args.torch_profile)
        llm.close()   # its threads and the switch interval; then its memory, before the next engine
        del llm
        gc.collect()
    print("\n".join(table(rows)))


def run_interleaved(variants: dict, args, engine_kw: dict, pool: list) -> list:
    """`--interleave`: every engine alive at once; per concurrency, `args.interleave` rounds of one
    call per variant, the order rotated each round (`paired_rows`)."""
    from deepinfer_core import LLM, SamplingParams

    params = SamplingParams(temperature=0, max_tokens=args.max_tokens)
    names = list(variants)
    shift = getattr(args, "build_rotate", 0) % len(names)
    made = {name: built(name, LLM(args.target, speculative_config=variants[name], **variant_engine_kw(name, engine_kw)))
            for name in names[shift:] + names[:shift]}
    print(f"built in order: {', '.join(made)}", flush=True)
    llms = {name: made[name] for name in names}   # (the tables' order: --variants')
    logs = {name: [] for name in llms} if args.step_log is not None else {}
    traces = ({name: StepTimes(llm, logs.get(name), ledger=args.step_log_ledger,
                                     phases=getattr(args, "step_log_phases", False)) for name, llm in llms.items()}
              if args.step_times or logs else {})
    rows = []
    heap = HeapOutside(not getattr(args, "gc_in_calls", False))   # (one clock for every concurrency)
    warmups = getattr(args, "warmup_calls", 1)
    streams = engine_streams() if getattr(args, "lockstep_streams", False) else None
    for c in args.concurrency:
        size = c * max(args.closed_loop, 1)
        sets = [pool[i * size:(i + 1) * size] for i in range(args.prompt_sets)]
        for llm in llms.values():   # warm-ups, excluded: the first set as measured (0: one prompt)
            for _ in range(max(warmups, 1)):
                with concurrency_cap(llm, c) if args.closed_loop and warmups else contextlib.nullcontext():
                    llm.chat(sets[0] if warmups else pool[:1], params)
        for name, trace in traces.items():
            trace.take()                 # forgets the warm-up's steps
            trace.take_harness()
            logs.get(name, []).clear()
        rows += paired_rows(llms, sets, params, args.interleave, c, logs, args.step_log,
                            cap=c if args.closed_loop else None, traces=traces,
                            log_every=args.step_log_every if logs else 1, heap=heap,
                            lockstep=getattr(args, "lockstep", False), lockstep_context=streams)
        for name, trace in traces.items():
            summary = trace.take()
            if args.step_times:
                print(c, name, summary, flush=True)
        write_table(rows, args.out)
    for c in args.profile_at or [max(args.concurrency)]:   # after every measured call: they stay unprofiled
        for name, llm in llms.items():
            if args.profile is not None:
                profile_run(llm, pool[:c], args.max_tokens, f"{name} at {c}", args.profile)
            if args.torch_profile is not None:
                torch_profile_run(llm, pool[:c], args.max_tokens, f"{name} at {c}", args.torch_profile)
    for llm in llms.values():
        llm.close()
    return rows


def table(rows: list) -> list[str]:
    paired = any("paired" in r for _, _, r in rows)
    lines = ["| concurrency | method | output tok/s | per-user tok/s | mean verified / round | mean accepted length |"
             + (" paired ratio to the first method: median (geometric mean, 95% bootstrap) |"
                " replies equal to the first method's |" if paired else ""),
             "|---|---|---|---|---|---|" + ("---|---|" if paired else "")]
    lines += [f"| {c} | {n} | {r['tok/s']:.0f} | {r['per-user tok/s']:.1f} | {r['verified/round']:.2f} | "
              f"{r['accepted len']:.2f} |" + (f" {_paired(r)} | {_same(r)} |" if paired else "")
              for c, n, r in sorted(rows, key=lambda x: x[0])]
    return lines


def _paired(row: dict) -> str:
    if "paired geomean" not in row:
        return f"{row['paired']:.3f}"
    return f"{row['paired']:.3f} ({row['paired geomean']:.3f}, {row['paired low']:.3f}-{row['paired high']:.3f})"


def _same(row: dict) -> str:
    if "same replies" not in row:
        return "-"
    text = f"{100 * row['same replies']:.0f}%"
    return text if row["first difference"] < 0 else f"{text} (others from token {row['first difference']:.0f})"


def write_table(rows: list, out: Path | None) -> None:
    if out is not None:
        out.write_text("\n".join(table(rows)) + "\n")


if __name__ == "__main__":
    main()
