# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`deepinfer bench latency`: TTFT, TPOT and the memory-bandwidth roofline at fixed batch sizes.

Workload (as `vllm bench latency`): for each batch size, `batch` requests of exactly `input_len`
random prompt token ids (seeded) that each emit exactly `output_len` tokens (greedy, `ignore_eos`),
repeated `num_iters` times after `num_iters_warmup` excluded warm-up iterations.

Roofline: a decode step must at least read every weight once plus the KV cache of every running
request, so its time is bounded below by `bytes / bandwidth` (the memory-bound roofline model,
Williams, Waterman & Patterson, CACM 2009). Bandwidth is a large device-to-device tensor copy
measured at the start of the same run.
"""

from __future__ import annotations

import argparse
import functools
import sys
import math
import random
import statistics
import time
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from deepinfer_cli.commands.engine_args import add_engine_args, engine_kwargs, parse_bytes


@dataclass
class LatencyResult:
    """Measurements of one batch size, over all timed iterations.

    Attributes:
        batch_size: requests per iteration.
        ttfts: time to first token of every request, seconds.
        tpots: (finished - first_token) / (output_len - 1) of every request, seconds.
        elapsed: wall time of all timed iterations, seconds.
        output_tokens: tokens emitted in the timed iterations.
        roofline_bytes: bytes one decode step must read (weights + KV at the mean context).
        hf_ttft, hf_tpot: HF transformers medians on the same prompts (seconds), when measured.
    """

    batch_size: int
    ttfts: list[float]
    tpots: list[float]
    elapsed: float
    output_tokens: int
    roofline_bytes: int
    hf_ttft: float | None = None
    hf_tpot: float | None = None


def add_parser(bsub: argparse._SubParsersAction) -> None:
    """Registers `latency` under the `bench` sub-command parser set `bsub`."""
    p = bsub.add_parser("latency", help="TTFT / TPOT / roofline fraction at fixed batch sizes")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 64], metavar="N")
    p.add_argument("--input-len", type=int, default=32, help="prompt tokens per request")
    p.add_argument("--output-len", type=int, default=128, help="output tokens per request (>= 2)")
    p.add_argument("--num-iters", type=int, default=3, help="timed iterations per batch size")
    p.add_argument("--num-iters-warmup", type=int, default=1, help="excluded iterations per batch size")
    p.add_argument("--seed", type=int, default=0, help="seed of the random prompt token ids")
    p.add_argument("--copy-bytes", type=functools.partial(parse_bytes, flag="--copy-bytes"), default=256 * 2**20,
                   help="tensor size of the bandwidth copy, e.g. 256MiB")
    p.add_argument("--hf", action="store_true",
                   help="also time HF transformers generate on the same prompts (same device and dtype)")
    add_engine_args(p)
    p.set_defaults(run=run_latency)


def check_latency_args(args: argparse.Namespace) -> None:
    """Raises ValueError (naming the flag) for a non-positive batch size, length or iteration count."""
    bad = [b for b in args.batch_sizes if b < 1]
    if bad:
        raise ValueError(f"--batch-sizes: every size must be >= 1, got {bad[0]}")
    if args.input_len < 1:
        raise ValueError(f"--input-len: must be >= 1, got {args.input_len}")
    if args.output_len < 2:
        raise ValueError(f"--output-len: must be >= 2 (TPOT needs two tokens), got {args.output_len}")
    if args.num_iters < 1:
        raise ValueError(f"--num-iters: must be >= 1, got {args.num_iters}")
    if args.num_iters_warmup < 0:
        raise ValueError(f"--num-iters-warmup: must be >= 0, got {args.num_iters_warmup}")
    if args.copy_bytes < 2**20:
        raise ValueError(f"--copy-bytes: must be >= 1MiB, got {args.copy_bytes}")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's default).

    Raises:
        ValueError: `values` is empty.
    """
    if not values:
        raise ValueError("percentile: no values")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def measure_copy_bandwidth(device: str, nbytes: int, repeats: int = 5) -> float:
    """Device memory bandwidth in bytes/s: (bytes read + written) / median time of a tensor copy.

    Args:
        device: torch device string (CUDA is synchronized around every copy).
        nbytes: size of the copied uint8 tensor.
        repeats: timed copies after one untimed one.
    """
    import torch

    dev = torch.device(device)
    src = torch.ones(nbytes, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    dst.copy_(src)
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        dst.copy_(src)
        sync()
        times.append(time.perf_counter() - start)
    return 2 * nbytes / statistics.median(times)


def random_prompts(batch: int, input_len: int, vocab: int, rng: random.Random) -> list[list[int]]:
    """`batch` prompts of `input_len` ids; ids avoid the first and last 100 (often special tokens)."""
    lo, hi = (100, vocab - 100) if vocab > 1000 else (0, vocab - 1)
    return [[rng.randint(lo, hi) for _ in range(input_len)] for _ in range(batch)]


def run_batch(llm, prompts: list[list[int]], output_len: int) -> tuple[list[float], list[float], float]:
    """One iteration: returns (TTFTs, TPOTs, wall seconds).

    Raises:
        ValueError: a request failed or did not emit exactly `output_len` tokens.
    """
    from deepinfer_core import SamplingParams

    params = SamplingParams(max_tokens=output_len, ignore_eos=True, temperature=0.0)
    start = time.perf_counter()
    outs = llm.generate([{"prompt_token_ids": p} for p in prompts], params)
    elapsed = time.perf_counter() - start
    for i, o in enumerate(outs):
        if o.error is not None:
            raise ValueError(f"benchmark request {i} failed: {o.error}")
        if len(o.outputs[0].token_ids) != output_len or o.metrics is None or o.metrics.tpot is None:
            raise ValueError(f"--output-len: request {i} emitted {len(o.outputs[0].token_ids)} tokens, "
                             f"expected {output_len}")
    return [o.metrics.ttft for o in outs], [o.metrics.tpot for o in outs], elapsed


def decode_bytes(model_bytes: int, kv_bytes_per_token: int, batch: int, input_len: int, output_len: int) -> int:
    """Bytes a decode step reads at least: the weights plus the KV cache at the mean decode context.

    The step that emits token k+1 (k = 1..output_len-1) attends over input_len + k positions, so
    the mean context is input_len + output_len / 2.
    """
    return int(model_bytes + batch * (input_len + output_len / 2) * kv_bytes_per_token)


def run_latency(args: argparse.Namespace) -> int:
    """The `bench latency` command; returns the exit code (ValueError for bad flags)."""
    from deepinfer_core import LLM

    check_latency_args(args)  # before the load
    console = Console() if sys.stdout.isatty() else Console(width=200)  # logs keep whole numbers
    with console.status("loading model"):
        llm = LLM(**engine_kwargs(args))
    need = args.input_len + args.output_len
    if need > llm.max_model_len:
        raise ValueError(f"--input-len + --output-len ({need}) exceeds max_model_len ({llm.max_model_len})")
    if max(args.batch_sizes) > llm.config.max_num_seqs:
        raise ValueError(f"--batch-sizes: {max(args.batch_sizes)} exceeds max_num_seqs "
                         f"({llm.config.max_num_seqs}); raise --max-num-seqs")
    with console.status("measuring copy bandwidth"):
        bandwidth = measure_copy_bandwidth(llm.config.device, args.copy_bytes)
    vocab = len(llm.get_tokenizer())
    preempted = llm.engine.num_preemptions
    results = []
    for batch in args.batch_sizes:
        rng = random.Random(args.seed)
        ttfts, tpots, elapsed = [], [], 0.0
        for it in range(args.num_iters_warmup + args.num_iters):
            with console.status(f"batch {batch}: iteration {it + 1}/{args.num_iters_warmup + args.num_iters}"):
                t, p, e = run_batch(llm, random_prompts(batch, args.input_len, vocab, rng), args.output_len)
            if it >= args.num_iters_warmup:
                ttfts += t
                tpots += p
                elapsed += e
        results.append(LatencyResult(batch, ttfts, tpots, elapsed, batch * args.output_len * args.num_iters,
                                     decode_bytes(llm.decode_weight_bytes, llm.kv_bytes_per_token, batch,
                                                  args.input_len, args.output_len)))
    preemptions = llm.engine.num_preemptions - preempted
    weight_bytes = llm.decode_weight_bytes
    if args.hf:
        run_hf_latency(llm, results, vocab, args, console)
    print_report(console, results, bandwidth, weight_bytes, preemptions, args)
    return 0


def run_hf_latency(llm, results: list[LatencyResult], vocab: int, args: argparse.Namespace, console: Console) -> None:
    """Times HF transformers on the same prompts (same seed) for every batch size, after freeing `llm`."""
    import gc

    import torch

    from deepinfer_cli.commands.hf_baseline import hf_latency, load_hf_model

    device, dtype, path = llm.config.device, llm.engine.runner.dtype, llm.model_path
    dummy = llm.config.load_format == "dummy"
    del llm
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    with console.status("loading HF transformers"):
        model = load_hf_model(path, dtype=dtype, device=device, dummy=dummy)
    for r in results:
        rng = random.Random(args.seed)
        ttfts, tpots = [], []
        for it in range(args.num_iters_warmup + args.num_iters):
            with console.status(f"HF batch {r.batch_size}: iteration {it + 1}"):
                t, p = hf_latency(model, random_prompts(r.batch_size, args.input_len, vocab, rng), args.output_len)
            if it >= args.num_iters_warmup:
                ttfts.append(t)
                tpots.append(p)
        r.hf_ttft, r.hf_tpot = statistics.median(ttfts), statistics.median(tpots)


def print_report(console: Console, results: list[LatencyResult], bandwidth: float, model_bytes: int,
                 preemptions: int, args: argparse.Namespace) -> None:
    """Prints the per-batch-size table, the measured bandwidth and the warm-up statement."""
    table = Table(title=f"latency: input {args.input_len}, output {args.output_len}, greedy, ignore_eos, "
                        f"seed {args.seed}, {args.num_iters} iteration(s); times in ms")
    table.add_column("batch", no_wrap=True)
    hf = any(r.hf_tpot is not None for r in results)
    cols = ["TTFT\np50", "TTFT\np99", "TPOT\np50", "TPOT\np99", "output\ntok/s", "roofline\nTPOT", "roofline\nfrac"]
    if hf:
        cols += ["HF\nTTFT", "HF\nTPOT", "HF TPOT /\nTPOT"]
    for col in cols:
        table.add_column(col, justify="right")
    for r in results:
        tpot = statistics.median(r.tpots)
        roofline = r.roofline_bytes / bandwidth
        row = [str(r.batch_size), f"{1e3 * statistics.median(r.ttfts):.2f}",
               f"{1e3 * percentile(r.ttfts, 99):.2f}", f"{1e3 * tpot:.2f}",
               f"{1e3 * percentile(r.tpots, 99):.2f}", f"{r.output_tokens / r.elapsed:.1f}",
               f"{1e3 * roofline:.3f}", f"{roofline / tpot:.3f}"]
        if hf:
            row += [f"{1e3 * r.hf_ttft:.2f}", f"{1e3 * r.hf_tpot:.2f}", f"{r.hf_tpot / tpot:.2f}"]
        table.add_row(*row)
    console.print(table)
    console.print("roofline TPOT: decode-step bytes / copy bandwidth (ms); roofline frac: roofline TPOT / TPOT p50")
    console.print(f"copy bandwidth: {bandwidth / 1e9:.2f} GB/s (read + write of a {args.copy_bytes / 2**20:.0f} "
                  f"MiB copy, median of 5); weights {model_bytes / 2**20:.1f} MiB; roofline bytes = weights + "
                  f"batch x (input + output/2) x KV bytes per token")
    console.print(f"warm-up: {args.num_iters_warmup} iteration(s) per batch size, excluded"
                  + ("; HF: medians of 1-token and full generate calls on the same prompts" if hf else ""))
    if preemptions:
        console.print(f"note: {preemptions} preemption(s) during the run; raise --kv-cache-memory")
