# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`deepinfer bench throughput`: the offline workload, DeepInfer and (optionally) HF transformers in one run.

Workload (as the nano-vllm / `vllm bench throughput` random dataset): `num_prompts` requests whose
prompt and output lengths are uniform in the given ranges, prompt tokens drawn at random from the
vocabulary, `ignore_eos` so every request emits exactly its output length, fixed seed.
Only tokens actually emitted count; the warm-up run is excluded and stated in the report.
"""

from __future__ import annotations

import argparse
import sys
import random
import time
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from deepinfer_cli.commands import bench_latency
from deepinfer_cli.commands.engine_args import add_engine_args, engine_kwargs
from deepinfer_cli.commands.hf_baseline import run_hf


@dataclass
class Workload:
    prompts: list[list[int]]
    output_lens: list[int]

    @property
    def prompt_tokens(self) -> int:
        return sum(len(p) for p in self.prompts)


@dataclass
class Result:
    name: str
    elapsed: float
    num_requests: int
    prompt_tokens: int
    output_tokens: int

    @property
    def output_tps(self) -> float:
        return self.output_tokens / self.elapsed

    @property
    def total_tps(self) -> float:
        return (self.prompt_tokens + self.output_tokens) / self.elapsed


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmarks")
    bsub = p.add_subparsers(dest="bench", required=True)
    t = bsub.add_parser("throughput", help="offline throughput on random prompts")
    t.add_argument("--num-prompts", type=int, default=256)
    t.add_argument("--input-len", type=int, nargs=2, default=[100, 1024], metavar=("MIN", "MAX"))
    t.add_argument("--output-len", type=int, nargs=2, default=[100, 1024], metavar=("MIN", "MAX"))
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--temperature", type=float, default=0.0)
    t.add_argument("--hf", action="store_true", help="also run HF transformers generate on the same workload")
    t.add_argument("--hf-batch-size", type=int, default=16)
    t.add_argument("--no-warmup", action="store_true")
    add_engine_args(t)
    t.set_defaults(run=run_throughput)
    bench_latency.add_parser(bsub)


def check_workload_args(num: int, input_len: tuple[int, int], output_len: tuple[int, int]) -> None:
    """Raises ValueError (naming the flag) when a length range is empty or non-positive, or `num` < 1."""
    for name, (lo, hi) in (("--input-len", input_len), ("--output-len", output_len)):
        if not 1 <= lo <= hi:
            raise ValueError(f"{name}: need 1 <= MIN <= MAX, got {lo} {hi}")
    if num < 1:
        raise ValueError(f"--num-prompts: must be >= 1, got {num}")


def make_workload(num: int, input_len: tuple[int, int], output_len: tuple[int, int], vocab: int,
                  seed: int) -> Workload:
    """Seeded random workload; token ids avoid the first and last 100 ids (often special tokens).

    Raises:
        ValueError: see `check_workload_args`.
    """
    check_workload_args(num, input_len, output_len)
    rng = random.Random(seed)
    lo_id, hi_id = (100, vocab - 100) if vocab > 1000 else (0, vocab - 1)
    prompts = [[rng.randint(lo_id, hi_id) for _ in range(rng.randint(*input_len))] for _ in range(num)]
    outs = [rng.randint(*output_len) for _ in range(num)]
    return Workload(prompts, outs)


def run_deepinfer(llm, workload: Workload, temperature: float) -> Result:
    from deepinfer_core import SamplingParams

    params = [SamplingParams(max_tokens=n, ignore_eos=True, temperature=temperature, seed=i)
              for i, n in enumerate(workload.output_lens)]
    prompts = [{"prompt_token_ids": p} for p in workload.prompts]
    start = time.perf_counter()
    outs = llm.generate(prompts, params)
    elapsed = time.perf_counter() - start
    failed = [(i, o.error) for i, o in enumerate(outs) if o.error is not None]
    if failed:  # a throughput figure over failed requests would be meaningless
        raise ValueError(f"{len(failed)} of {len(outs)} benchmark requests failed; request {failed[0][0]}: "
                         f"{failed[0][1]}")
    emitted = sum(len(c.token_ids) for o in outs for c in o.outputs)
    return Result("DeepInfer", elapsed, len(outs), workload.prompt_tokens, emitted)


def run_throughput(args: argparse.Namespace) -> int:
    from deepinfer_core import LLM

    if args.hf_batch_size < 1:
        raise ValueError(f"--hf-batch-size: must be >= 1, got {args.hf_batch_size}")
    check_workload_args(args.num_prompts, tuple(args.input_len), tuple(args.output_len))  # before the load
    console = Console() if sys.stdout.isatty() else Console(width=200)  # logs keep whole numbers
    with console.status("loading model"):
        llm = LLM(**engine_kwargs(args))
    if args.input_len[1] > llm.max_model_len:
        raise ValueError(f"--input-len: MAX ({args.input_len[1]}) exceeds max_model_len ({llm.max_model_len})")
    if args.input_len[1] + args.output_len[1] > llm.max_model_len:  # else outputs are cut short silently
        raise ValueError(f"--output-len: input MAX + output MAX ({args.input_len[1] + args.output_len[1]}) "
                         f"exceeds max_model_len ({llm.max_model_len}); raise --max-model-len")
    vocab = len(llm.get_tokenizer())
    workload = make_workload(args.num_prompts, tuple(args.input_len), tuple(args.output_len), vocab, args.seed)
    if not args.no_warmup:
        warm = make_workload(2, (16, 32), (8, 8), vocab, args.seed + 1)
        with console.status("warm-up (excluded)"):
            run_deepinfer(llm, warm, args.temperature)
    with console.status(f"DeepInfer: {args.num_prompts} requests"):
        results = [run_deepinfer(llm, workload, args.temperature)]
    if args.hf:  # the slow baseline comes second: print ours now, so a run cut short keeps it
        r = results[0]
        console.print(f"DeepInfer: {r.elapsed:.2f} s, {r.output_tps:.1f} output tok/s, {r.output_tokens} output tokens")
        model_path, dtype, device = llm.model_path, llm.engine.runner.dtype, llm.config.device
        dummy = llm.config.load_format == "dummy"
        del llm
        with console.status(f"HF transformers: {args.num_prompts} requests"):
            results.append(run_hf(model_path, workload, args.hf_batch_size, args.temperature,
                                  warmup=not args.no_warmup, result_cls=Result, dtype=dtype, device=device,
                                  dummy=dummy))
    print_table(console, results, args)
    return 0


def print_table(console: Console, results: list[Result], args: argparse.Namespace) -> None:
    table = Table(title=f"throughput: {args.num_prompts} requests, input {args.input_len[0]}-{args.input_len[1]}, "
                        f"output {args.output_len[0]}-{args.output_len[1]}, seed {args.seed}, ignore_eos")
    table.add_column("engine", no_wrap=True)
    for col in ("elapsed s", "requests/s", "output tok/s", "total tok/s", "output tokens"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(r.name, f"{r.elapsed:.2f}", f"{r.num_requests / r.elapsed:.2f}", f"{r.output_tps:.1f}",
                      f"{r.total_tps:.1f}", str(r.output_tokens))
    console.print(table)
    if len(results) > 1:
        console.print(f"ratio DeepInfer / HF transformers (output tok/s): "
                      f"{results[0].output_tps / results[1].output_tps:.2f}x")
    console.print("warm-up: " + ("none" if args.no_warmup else "one short run per engine, excluded"))
