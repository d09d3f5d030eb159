# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Where a benchmark's time goes: per-step timings of an engine run, and a torch profile of a window.

Runs the `deepinfer bench throughput` workload (same generator, same seed) on one engine, timing
every engine step on the host and classifying it by what the runner did:
  graph        a pure-decode step replayed from a CUDA graph,
  mixed-graph  a prefill or mixed step replayed from a mixed-step graph (the default; not with
               `--no-mixed-cuda-graphs`),
  eager        any other step (prefill, mixed prefill + decode, decode above the largest graph).
A progress line is printed every `--every` seconds (steps, emitted tokens, mean ms per step), so a
run cut short by a time limit still tells where it was. At the end: steps, total and mean ms per
kind, and the share of wall time spent outside `execute_model` (scheduling, sampling bookkeeping,
output processing). `--profile START:STOP` wraps those engine steps in `torch.profiler` and prints
the top operators by device time and by host time.

    python3 packages/deepinfer-core/benchmarks/step_trace.py --model CONFIG_DIR --load-format dummy \
        --dtype bfloat16 --num-prompts 256 --input-len 100 1024 --output-len 100 1024 --profile 400:420

Engine flags are those of `deepinfer bench` (the CLI's parser is reused). Host timings are wall
clock after a device synchronise at each step's end only in `--sync` mode (which removes the
overlap); by default steps are timed as the engine runs them, asynchronously.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict


def main() -> None:
    from deepinfer_cli.commands.bench import make_workload
    from deepinfer_cli.commands.engine_args import add_engine_args, engine_kwargs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-prompts", type=int, default=256)
    parser.add_argument("--input-len", type=int, nargs=2, default=(100, 1024))
    parser.add_argument("--output-len", type=int, nargs=2, default=(100, 1024))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temperature", type=float, default=0.0, help="as `deepinfer bench throughput`")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between progress lines")
    parser.add_argument("--profile", default=None, help="START:STOP engine steps to profile")
    parser.add_argument("--sync", action="store_true", help="synchronise the device after every step")
    add_engine_args(parser)
    args = parser.parse_args()

    import torch
    from deepinfer_core import LLM, SamplingParams

    start = time.perf_counter()
    llm = LLM(**engine_kwargs(args))
    print(f"engine ready in {time.perf_counter() - start:.1f} s", flush=True)
    vocab = len(llm.get_tokenizer())
    workload = make_workload(args.num_prompts, tuple(args.input_len), tuple(args.output_len), vocab, args.seed)
    engine, runner = llm.engine, llm.engine.runner
    cuda = str(llm.config.device).startswith("cuda")

    kinds: list[str] = []
    exec_time: list[float] = []
    original_execute = runner.execute_model

    def replays() -> int | None:
        """Decode-graph replays so far, with and without the drafter's features (`plain_graphs`)."""
        counts = [getattr(getattr(runner, name, None), "replays", None) for name in ("graphs", "plain_graphs")]
        counts = [c for c in counts if c is not None]
        return sum(counts) if counts else None

    def mixed_replays() -> int:
        return getattr(getattr(runner, "mixed_graphs", None), "replays", 0)

    def execute(chunks, *a, **kw):
        t = time.perf_counter()
        before, mixed = replays(), mixed_replays()
        out = original_execute(chunks, *a, **kw)
        after = replays()
        decode = all(len(c.token_ids) == 1 for c in chunks)
        kinds.append("graph" if before is not None and after != before else "mixed-graph" if mixed_replays() != mixed
                     else ("decode-eager" if decode else "eager"))
        exec_time.append(time.perf_counter() - t)
        return out

    runner.execute_model = execute
    step_times: list[float] = []
    step_kind: list[str] = []
    original_step = engine.step
    lo, hi = (int(x) for x in args.profile.split(":")) if args.profile else (-1, -1)
    prof = None

    def step():
        nonlocal prof
        i = len(step_times)
        if i == lo:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]
                                          + ([torch.profiler.ProfilerActivity.CUDA] if cuda else []))
            prof.__enter__()
        n_exec = len(kinds)
        t = time.perf_counter()
        out = original_step()
        if args.sync and cuda:
            torch.cuda.synchronize()
        step_times.append(time.perf_counter() - t)
        step_kind.append(kinds[-1] if len(kinds) > n_exec else "no-forward")
        if i == hi - 1 and prof is not None:
            if cuda:
                torch.cuda.synchronize()
            prof.__exit__(None, None, None)
        return out

    engine.step = step
    params = [SamplingParams(max_tokens=n, ignore_eos=True, temperature=args.temperature, seed=i)
              for i, n in enumerate(workload.output_lens)]
    prompts = [{"prompt_token_ids": p} for p in workload.prompts]
    emitted = 0
    last = [time.perf_counter()]
    t0 = time.perf_counter()

    def progress(done: int, total: int, new_tokens: int) -> None:
        nonlocal emitted
        emitted += new_tokens
        now = time.perf_counter()
        if now - last[0] >= args.every:
            last[0] = now
            recent = step_times[-200:]
            print(f"[{now - t0:6.1f} s] steps {len(step_times)} done {done}/{total} emitted {emitted} "
                  f"({emitted / (now - t0):.0f} tok/s) last-200 mean step {1e3 * statistics.mean(recent):.2f} ms",
                  flush=True)

    outs = llm.generate(prompts, params, on_progress=progress)
    wall = time.perf_counter() - t0
    tokens = sum(len(c.token_ids) for o in outs for c in o.outputs)
    print(f"\nwall {wall:.2f} s, {tokens} emitted tokens, {tokens / wall:.0f} output tok/s, {len(step_times)} steps")
    by_kind = defaultdict(list)
    for k, dt in zip(step_kind, step_times):
        by_kind[k].append(dt)
    print("| step kind | steps | total s | mean ms | median ms |\n|---|---|---|---|---|")
    for k, v in sorted(by_kind.items(), key=lambda kv: -sum(kv[1])):
        print(f"| {k} | {len(v)} | {sum(v):.2f} | {1e3 * statistics.mean(v):.2f} | {1e3 * statistics.median(v):.2f} |")
    outside = wall - sum(exec_time)
    print(f"host time outside execute_model: {outside:.2f} s ({100 * outside / wall:.0f}% of wall); "
          f"inside execute_model (launch + any device wait): {sum(exec_time):.2f} s")
    if prof is not None:
        sort = "self_cuda_time_total" if cuda else "self_cpu_time_total"
        print(prof.key_averages().table(sort_by=sort, row_limit=25, max_name_column_width=60))
        if cuda:
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))


if __name__ == "__main__":
    main()
