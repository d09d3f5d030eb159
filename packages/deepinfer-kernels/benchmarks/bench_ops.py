# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Micro-benchmark of every op and backend on one CUDA device, against measured ceilings.

    python packages/deepinfer-kernels/benchmarks/bench_ops.py [--dtype bfloat16] [--quick]

In one run it measures the device-to-device copy bandwidth (bytes read + written per second)
and a large bf16 matmul (TFLOP/s), then times each op (CUDA events, median of repeats after
warm-up) for every backend available on the device and prints a markdown table: the
achieved GB/s (memory-bound ops) or TFLOP/s (prefill attention, MoE) and that figure as a
fraction of the matching ceiling. Shapes follow a Llama-3-8B-like layer (H=4096, 32 query /
8 KV heads of 128, block size 16).
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass
from typing import Callable

import torch

from deepinfer_kernels import ops
from deepinfer_kernels.testing import impls


@dataclass
class Workload:
    """One op call to time: `run(backend)`, and the bytes or FLOPs one call moves or does."""

    op: str
    shape: str
    run: Callable[[str], object]
    bytes: float = 0.0
    flops: float = 0.0


def time_ms(fn: Callable[[], object], warmup: int = 3, repeats: int = 20) -> float:
    """Median milliseconds of `fn` over `repeats` timed calls (CUDA events)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def copy_bandwidth(device: torch.device) -> float:
    """Device-to-device copy, GB/s counting bytes read plus bytes written."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src))
    return 2 * src.numel() / ms / 1e6


def matmul_tflops(device: torch.device, n: int = 8192) -> float:
    """A bf16 n x n x n matmul, TFLOP/s."""
    a = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    ms = time_ms(lambda: a @ b, repeats=10)
    return 2 * n ** 3 / ms / 1e9


def paged_cache(seq_lens: list[int], kv_heads: int, head: int, block: int, dtype, device):
    """Random caches and a shuffled block table holding `seq_lens` tokens per request."""
    per = [-(-s // block) for s in seq_lens]
    num_blocks = sum(per)
    order = torch.randperm(num_blocks, device=device).to(torch.int32)
    table = torch.zeros(len(seq_lens), max(per), dtype=torch.int32, device=device)
    used = 0
    for b, n in enumerate(per):
        table[b, :n] = order[used:used + n]
        used += n
    shape = (num_blocks, block, kv_heads, head)
    k_cache = torch.randn(shape, dtype=dtype, device=device)
    return k_cache, torch.randn_like(k_cache), table


def workloads(dtype: torch.dtype, device: torch.device, quick: bool) -> list[Workload]:
    size = torch.finfo(dtype).bits // 8
    tokens, hidden, inter = (1024, 4096, 14336) if not quick else (256, 4096, 14336)
    q_heads, kv_heads, head, block = 32, 8, 128, 16
    rnd = lambda *s, dt=dtype: torch.randn(*s, dtype=dt, device=device)  # noqa: E731
    x, res, w = rnd(tokens, hidden), rnd(tokens, hidden), rnd(hidden)
    gate_up = rnd(tokens, 2 * inter)
    pos = torch.randint(0, 8192, (tokens,), device=device)
    q, k = rnd(tokens, q_heads, head), rnd(tokens, kv_heads, head)
    cos_sin = ops.build_rope_cache(head, 8192, 500000.0, None, torch.float32, device)
    k_cache, v_cache, _ = paged_cache([tokens], kv_heads, head, block, dtype, device)
    slots = torch.randperm(k_cache.shape[0] * block, device=device)[:tokens]
    out = [
        Workload("rms_norm", f"T{tokens} H{hidden} +res", lambda b: ops.rms_norm(
            x, w, 1e-6, res, backend=b), bytes=4 * tokens * hidden * size),
        Workload("silu_and_mul", f"T{tokens} I{inter}", lambda b: ops.silu_and_mul(
            gate_up, backend=b), bytes=3 * tokens * inter * size),
        Workload("rotary_embedding", f"T{tokens} Hq{q_heads} Hk{kv_heads} D{head}",
                 lambda b: ops.rotary_embedding(pos, q, k, cos_sin, True, backend=b),
                 bytes=2 * tokens * (q_heads + kv_heads) * head * size),
        Workload("store_kv_cache", f"T{tokens} Hk{kv_heads} D{head}", lambda b: ops.store_kv_cache(
            k, k, k_cache, v_cache, slots, backend=b), bytes=4 * tokens * kv_heads * head * size),
    ]
    batch, context = (64, 2048) if not quick else (16, 1024)
    lens = [context] * batch
    dk, dv, table = paged_cache(lens, kv_heads, head, block, dtype, device)
    dq = rnd(batch, q_heads, head)
    seq = torch.tensor(lens, dtype=torch.int32, device=device)
    out.append(Workload("paged_attention_decode", f"B{batch} ctx{context}",
                        lambda b: ops.paged_attention_decode(dq, dk, dv, table, seq, head ** -0.5,
                                                             backend=b),
                        bytes=2 * batch * context * kv_heads * head * size))
    reqs, length = (8, 1024) if not quick else (2, 512)
    pk, pv, ptable = paged_cache([length] * reqs, kv_heads, head, block, dtype, device)
    pq = rnd(reqs * length, q_heads, head)
    cu = torch.arange(0, reqs * length + 1, length, dtype=torch.int32, device=device)
    plens = torch.full((reqs,), length, dtype=torch.int32, device=device)
    out.append(Workload("paged_attention_prefill", f"{reqs}x{length} causal",
                        lambda b: ops.paged_attention_prefill(pq, pk, pv, ptable, cu, plens,
                                                              head ** -0.5, backend=b),
                        flops=4 * reqs * (length * (length + 1) / 2) * q_heads * head))
    experts, top_k, moe_inter, moe_tokens = 64, 6, 1408, 256 if not quick else 64
    hx = rnd(moe_tokens, 2048)
    logits = rnd(moe_tokens, experts, dt=torch.float32)
    w13, w2 = rnd(experts, 2 * moe_inter, 2048) * 0.02, rnd(experts, 2048, moe_inter) * 0.02
    out.append(Workload("fused_moe", f"T{moe_tokens} E{experts} k{top_k} I{moe_inter}",
                        lambda b: ops.fused_moe(hx, logits, w13, w2, top_k, backend=b),
                        flops=moe_tokens * top_k * 6 * 2048 * moe_inter))
    vocab, rows = 128256, 64
    slog = rnd(rows, vocab, dt=torch.float32)
    temp = torch.full((rows,), 0.8, device=device)
    params = (temp, torch.full((rows,), 50, device=device), torch.full((rows,), 0.9, device=device),
              torch.zeros(rows, device=device), torch.arange(rows, device=device),
              torch.zeros(rows, dtype=torch.int64, device=device))
    out.append(Workload("sample", f"B{rows} V{vocab}", lambda b: ops.sample(slog, *params, backend=b),
                        bytes=rows * vocab * 4))
    blog = rnd(rows, vocab)
    mask = torch.randint(-2**31, 2**31, (rows, -(-vocab // 32)), dtype=torch.int32, device=device)
    out.append(Workload("apply_token_bitmask", f"B{rows} V{vocab}",
                        lambda b: ops.apply_token_bitmask(blog, mask, backend=b),
                        bytes=rows * vocab * size + mask.numel() * 4))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--quick", action="store_true", help="smaller shapes")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_ops.py needs a CUDA device")
    device = torch.device("cuda")
    dtype = getattr(torch, args.dtype)
    bandwidth, tflops = copy_bandwidth(device), matmul_tflops(device)
    print(f"Device: {torch.cuda.get_device_name(device)}; dtype {args.dtype}")
    print(f"Ceilings: device-to-device copy {bandwidth:.0f} GB/s (read + write), "
          f"bf16 matmul 8192^3 {tflops:.0f} TFLOP/s\n")
    print("| op | shape | backend | time (us) | achieved | of ceiling |")
    print("|---|---|---|---:|---:|---:|")
    for work in workloads(dtype, device, args.quick):
        for backend in ["reference"] + impls(work.op, "cuda"):
            ms = time_ms(lambda: work.run(backend), repeats=5 if backend == "reference" else 20)
            if work.flops:
                achieved, ceiling, unit = work.flops / ms / 1e9, tflops, "TFLOP/s"
            else:
                achieved, ceiling, unit = work.bytes / ms / 1e6, bandwidth, "GB/s"
            print(f"| {work.op} | {work.shape} | {backend} | {ms * 1e3:.1f} | "
                  f"{achieved:.1f} {unit} | {100 * achieved / ceiling:.1f}% |")


if __name__ == "__main__":
    main()
