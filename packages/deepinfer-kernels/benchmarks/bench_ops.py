# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Micro-benchmark of every op and backend on one CUDA device, against measured ceilings.

    python packages/deepinfer-kernels/benchmarks/bench_ops.py [--dtype bfloat16] [--quick]
        [--ops rms_norm,paged_attention_decode] [--json results.json]

In one run it measures the device-to-device copy bandwidth (bytes read + written per second)
and a large bf16 matmul (TFLOP/s), then times each op for every backend available on the
device, two ways:

- eager: one Python call per timed region (CUDA events around the call, median of repeats
  after warm-up). The GPU idles while the host validates, dispatches and launches, so this
  is what an eager engine pays per call, host overhead included.
- direct: as eager, but calling the backend's implementation directly, without the public
  op's argument checks and the registry's selection; eager - direct is their cost.
- graph: N calls captured in one `torch.cuda.CUDAGraph`, median replay time / N. This is
  the kernels alone (plus the graph's launch gaps), what a graph-captured engine pays.

Every workload rotates among enough independent input sets (each call reads a different
set) that the data of consecutive calls exceeds the L2 cache several times, so the small
(decode-batch) sizes are not timed out of the cache. The `tiny` rows run each op on a
minimal input: their eager - graph difference is the per-call host overhead.
Shapes follow a Llama-3-8B-like layer (H=4096, I=14336, 32 query / 8 KV heads of 128,
block size 16). Reference rows are timed eagerly only. The fused_moe rows (E=64 top-8 and
E=8 top-2 at H=2048, T = 256, 1024, 4096) count 6 * T * top_k * H * I FLOPs and also time
dense cuBLAS GEMMs of the same FLOPs ([T * top_k, H] x [H, 2I], then [T * top_k, I] x [I, H]);
the note column gives that rate and the ratio of the two graph times (1.0 = as fast as
dense). The sample rows use a Llama-3 vocabulary, with and without top-k/top-p.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
from dataclasses import asdict, dataclass
from typing import Callable

import torch

from deepinfer_kernels import ops
from deepinfer_kernels._registry import default_registry
from deepinfer_kernels.testing import impls

ROTATE_BYTES = 256e6          # input data per rotation: > 4x the H200's 60 MB L2
MAX_SETS = 128


@dataclass
class Workload:
    """One op call to time: `make()` allocates fresh inputs and returns the op's arguments."""

    op: str
    shape: str
    make: Callable[[], tuple]
    bytes: float = 0.0
    flops: float = 0.0
    dense: Callable[[], Callable[[], object]] | None = None   # same-FLOPs dense GEMMs to compare


@dataclass
class Row:
    op: str
    shape: str
    backend: str
    eager_us: float
    direct_us: float | None
    graph_us: float | None
    unit: str
    eager_rate: float
    graph_rate: float | None
    eager_pct: float
    graph_pct: float | None
    note: str = ""


def time_eager(fns: list[Callable[[], object]], warmup: int = 3, repeats: int = 20) -> float:
    """Median microseconds of one call (CUDA events around each call; inputs rotate)."""
    for i in range(max(warmup, len(fns))):
        fns[i % len(fns)]()
    torch.cuda.synchronize()
    times = []
    for i in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fns[i % len(fns)]()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return 1e3 * statistics.median(times)


def time_graph(fns: list[Callable[[], object]], calls: int, repeats: int = 10) -> float:
    """Median microseconds per call of a CUDA graph holding `calls` calls (inputs rotate)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):                    # compile and warm up outside the capture
        for fn in fns:
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fns[i % len(fns)]()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return 1e3 * statistics.median(times) / calls


def copy_bandwidth(device: torch.device) -> float:
    """Device-to-device copy, GB/s counting bytes read plus bytes written."""
    src = torch.randint(0, 255, (1 << 30,), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    us = time_eager([lambda: dst.copy_(src)])
    return 2 * src.numel() / us / 1e3


def matmul_tflops(device: torch.device, n: int = 8192) -> float:
    """A bf16 n x n x n matmul on random data, TFLOP/s."""
    a = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    us = time_eager([lambda: a @ b], repeats=10)
    return 2 * n ** 3 / us / 1e6


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


class Builder:
    """Builds the workloads of one dtype on one device (Llama-3-8B-like layer)."""

    HIDDEN, INTER, Q_HEADS, KV_HEADS, HEAD, BLOCK = 4096, 14336, 32, 8, 128, 16

    def __init__(self, dtype: torch.dtype, device: torch.device):
        self.dtype, self.device = dtype, device
        self.size = torch.finfo(dtype).bits // 8

    def rnd(self, *shape, dtype=None) -> torch.Tensor:
        return torch.randn(*shape, dtype=dtype or self.dtype, device=self.device)

    def rms_norm(self, tokens: int, hidden: int = HIDDEN, tag: str = "") -> Workload:
        def make():
            x, res, w = self.rnd(tokens, hidden), self.rnd(tokens, hidden), self.rnd(hidden)
            return (x, w, 1e-6, res)
        return Workload("rms_norm", f"T{tokens} H{hidden} +res{tag}", make,
                        bytes=4 * tokens * hidden * self.size)

    def silu_and_mul(self, tokens: int, inter: int = INTER, tag: str = "") -> Workload:
        def make():
            gate_up = self.rnd(tokens, 2 * inter)
            return (gate_up,)
        return Workload("silu_and_mul", f"T{tokens} I{inter}{tag}", make,
                        bytes=3 * tokens * inter * self.size)

    def rotary(self, tokens: int, tag: str = "") -> Workload:
        hq, hk, d = self.Q_HEADS, self.KV_HEADS, self.HEAD
        cos_sin = ops.build_rope_cache(d, 8192, 500000.0, None, torch.float32, self.device)

        def make():
            pos = torch.randint(0, 8192, (tokens,), device=self.device)
            q, k = self.rnd(tokens, hq, d), self.rnd(tokens, hk, d)
            return (pos, q, k, cos_sin, True)
        return Workload("rotary_embedding", f"T{tokens} Hq{hq} Hk{hk} D{d}{tag}", make,
                        bytes=2 * tokens * (hq + hk) * d * self.size)

    def store_kv_cache(self, tokens: int, tag: str = "") -> Workload:
        hk, d, blk = self.KV_HEADS, self.HEAD, self.BLOCK

        def make():
            k, v = self.rnd(tokens, hk, d), self.rnd(tokens, hk, d)
            k_cache, v_cache, _ = paged_cache([tokens], hk, d, blk, self.dtype, self.device)
            slots = torch.randperm(k_cache.shape[0] * blk, device=self.device)[:tokens]
            return (k, v, k_cache, v_cache, slots)
        return Workload("store_kv_cache", f"T{tokens} Hk{hk} D{d}{tag}", make,
                        bytes=4 * tokens * hk * d * self.size)

    def decode(self, batch: int, context: int, tag: str = "") -> Workload:
        hq, hk, d, blk = self.Q_HEADS, self.KV_HEADS, self.HEAD, self.BLOCK

        def make():
            k_cache, v_cache, table = paged_cache([context] * batch, hk, d, blk, self.dtype,
                                                  self.device)
            q = self.rnd(batch, hq, d)
            seq = torch.full((batch,), context, dtype=torch.int32, device=self.device)
            return (q, k_cache, v_cache, table, seq, d ** -0.5)
        return Workload("paged_attention_decode", f"B{batch} ctx{context}{tag}", make,
                        bytes=2 * batch * context * hk * d * self.size)

    def prefill(self, reqs: int, length: int) -> Workload:
        hq, hk, d, blk = self.Q_HEADS, self.KV_HEADS, self.HEAD, self.BLOCK

        def make():
            k_cache, v_cache, table = paged_cache([length] * reqs, hk, d, blk, self.dtype,
                                                  self.device)
            q = self.rnd(reqs * length, hq, d)
            cu = torch.arange(0, reqs * length + 1, length, dtype=torch.int32, device=self.device)
            lens = torch.full((reqs,), length, dtype=torch.int32, device=self.device)
            return (q, k_cache, v_cache, table, cu, lens, d ** -0.5)
        return Workload("paged_attention_prefill", f"{reqs}x{length} causal", make,
                        flops=4 * reqs * (length * (length + 1) / 2) * hq * d)

    def fused_moe(self, tokens: int, experts: int = 64, top_k: int = 8, inter: int = 1024,
                  hidden: int = 2048) -> Workload:
        """MoE layer (E=64, top-8, H=2048, I=1024: OLMoE-like), compared with dense GEMMs of the
        same FLOPs: [T * top_k, H] x [H, 2I] then [T * top_k, I] x [I, H] (cuBLAS)."""
        def make():
            x, logits = self.rnd(tokens, hidden), self.rnd(tokens, experts, dtype=torch.float32)
            w13 = self.rnd(experts, 2 * inter, hidden) * 0.02
            w2 = self.rnd(experts, hidden, inter) * 0.02
            return (x, logits, w13, w2, top_k)

        def dense():
            rows = tokens * top_k
            a, b13 = self.rnd(rows, hidden), self.rnd(hidden, 2 * inter) * 0.02
            act, b2 = self.rnd(rows, inter), self.rnd(inter, hidden) * 0.02
            return lambda: (a @ b13, act @ b2)
        return Workload("fused_moe", f"T{tokens} E{experts} k{top_k} H{hidden} I{inter}", make,
                        flops=tokens * top_k * 6 * hidden * inter, dense=dense)

    def sample(self, rows: int, vocab: int = 128256, filters: bool = True) -> Workload:
        """Top-k 50 + top-p 0.9 (the slowest path), or plain temperature sampling."""
        dev = self.device

        def make():
            logits = self.rnd(rows, vocab, dtype=torch.float32)
            top_k, top_p = (50, 0.9) if filters else (0, 1.0)
            params = (torch.full((rows,), 0.8, device=dev),
                      torch.full((rows,), top_k, device=dev),
                      torch.full((rows,), top_p, device=dev), torch.zeros(rows, device=dev),
                      torch.arange(rows, device=dev),
                      torch.zeros(rows, dtype=torch.int64, device=dev))
            return (logits, *params)
        tag = "top-k 50 top-p 0.9" if filters else "plain"
        return Workload("sample", f"B{rows} V{vocab} {tag}", make, bytes=rows * vocab * 4)

    def linear(self, tokens: int, out_features: int, in_features: int, tag: str = "") -> Workload:
        """A decode-sized Linear: bound by streaming the [N, K] weight once (bytes = weight)."""
        def make():
            return (self.rnd(tokens, in_features), self.rnd(out_features, in_features) / in_features ** 0.5, None)
        return Workload("linear", f"T{tokens} N{out_features} K{in_features}{tag}", make,
                        bytes=out_features * in_features * self.size)

    def bitmask(self, rows: int, vocab: int = 128256, tag: str = "") -> Workload:
        words = -(-vocab // 32)

        def make():
            logits = self.rnd(rows, vocab)
            mask = torch.randint(-2**31, 2**31, (rows, words), dtype=torch.int32,
                                 device=self.device)
            return (logits, mask)
        return Workload("apply_token_bitmask", f"B{rows} V{vocab}{tag}", make,
                        bytes=rows * vocab * self.size + rows * words * 4)


def workloads(dtype: torch.dtype, device: torch.device, quick: bool) -> list[Workload]:
    """Tiny inputs (host overhead), decode-batch sizes, and prefill-batch sizes."""
    b = Builder(dtype, device)
    tiny = " (tiny)"
    big_t = 1024 if quick else 8192
    out = [b.rms_norm(1, 128, tiny), b.silu_and_mul(1, 128, tiny), b.rotary(1, tiny),
           b.store_kv_cache(1, tiny), b.decode(1, 16, tiny), b.bitmask(1, 1024, tiny)]
    for tokens in (64, 256, big_t):
        out += [b.rms_norm(tokens), b.silu_and_mul(tokens), b.rotary(tokens),
                b.store_kv_cache(tokens)]
    out += [b.decode(16, 1024)] if quick else [b.decode(64, 2048), b.decode(8, 8192)]
    out += [b.prefill(2, 512)] if quick else [b.prefill(8, 1024)]
    moe_tokens = (256,) if quick else (256, 1024, 4096)
    out += [b.fused_moe(t) for t in moe_tokens]
    out += [b.fused_moe(t, experts=8, top_k=2, inter=768) for t in moe_tokens]
    out += [b.sample(1), b.sample(64), b.sample(64, filters=False), b.bitmask(64)]
    # Decode-step matrices: Qwen3-0.6B (qkv, o, gate_up, down, LM head) and Llama-3-8B, T = 1 and 8.
    for tokens in (1, 8):
        for n, k, tag in ((4096, 1024, " q3-0.6b qkv"), (1024, 2048, " q3-0.6b o"), (6144, 1024, " q3-0.6b gate_up"),
                          (1024, 3072, " q3-0.6b down"), (151936, 1024, " q3-0.6b lm_head"),
                          (6144, 4096, " l3-8b qkv"), (28672, 4096, " l3-8b gate_up"), (4096, 14336, " l3-8b down")):
            out.append(b.linear(tokens, n, k, tag))
    return out


def direct_call(op: str, backend: str, args: tuple) -> Callable[[], object]:
    """The backend's implementation called as `dispatch` calls it, without the public op's
    validation and the registry's selection (what remains is the wrapper and the launch).

    One public call records the implementation and the exact arguments the op hands it."""
    registry = default_registry()
    seen = {}
    select = registry.select

    def spy(*a):
        seen["impl"], seen["args"], seen["kwargs"] = select(*a), a[3], a[4]
        return seen["impl"]

    registry.select = spy
    try:
        getattr(ops, op)(*args, backend=backend)
    finally:
        del registry.select   # the instance attribute; the class's method again
    fn, full, kwargs = registry.load(seen["impl"]), seen["args"], seen["kwargs"]
    return lambda: fn(*full, **kwargs)


def measure(work: Workload, backend: str, bandwidth: float, tflops: float) -> Row:
    """Eager, direct and (non-reference backends) graph timings of one workload."""
    per_set = work.bytes or 1.0
    sets = 1 if work.flops else max(1, min(MAX_SETS, math.ceil(ROTATE_BYTES / per_set)))
    inputs = [work.make() for _ in range(sets)]
    op = getattr(ops, work.op)
    fns = [lambda a=a: op(*a, backend=backend) for a in inputs]
    reference = backend == "reference"
    eager = time_eager(fns, repeats=5 if reference else 20)
    direct = graph = None
    if reference and work.op == "linear":  # the vendor GEMM is the baseline to beat: time it in a graph too
        graph = time_graph(fns, calls=max(20, sets))
    if not reference:
        direct = time_eager([direct_call(work.op, backend, a) for a in inputs])
        graph = time_graph(fns, calls=max(20, sets))
    if work.flops:
        unit, amount, ceiling = "TFLOP/s", work.flops / 1e6, tflops
    else:
        unit, amount, ceiling = "GB/s", work.bytes / 1e3, bandwidth
    rate = lambda us: None if us is None else amount / us            # noqa: E731
    pct = lambda r: None if r is None else 100 * r / ceiling          # noqa: E731
    note = ""
    if work.dense is not None and graph is not None:
        dense_us = time_graph([work.dense()], calls=20)
        note = (f"dense same FLOPs {amount / dense_us:.0f} TFLOP/s, "
                f"MoE time / dense time {graph / dense_us:.2f}")
    return Row(work.op, work.shape, backend, eager, direct, graph, unit, rate(eager),
               rate(graph), pct(rate(eager)), pct(rate(graph)), note)


def format_row(row: Row) -> str:
    direct = "-" if row.direct_us is None else f"{row.direct_us:.1f}"
    graph = ("- | - | -" if row.graph_us is None else
             f"{row.graph_us:.1f} | {row.graph_rate:.1f} | {row.graph_pct:.1f}%")
    return (f"| {row.op} | {row.shape} | {row.backend} | {row.eager_us:.1f} | "
            f"{row.eager_pct:.1f}% | {direct} | {graph} | {row.unit} | {row.note} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--quick", action="store_true", help="smaller shapes")
    parser.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    parser.add_argument("--no-reference", action="store_true",
                        help="skip reference rows, except for linear (its reference is the vendor GEMM, "
                             "the comparison the skinny matmul needs)")
    parser.add_argument("--json", default="", help="also write the rows to this file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_ops.py needs a CUDA device")
    os.environ.setdefault("DEEPINFER_TRITON_GEMV", "1")  # time the opt-in skinny matmul against cuBLAS
    device = torch.device("cuda")
    dtype = getattr(torch, args.dtype)
    wanted = {o for o in args.ops.split(",") if o}
    bandwidth, tflops = copy_bandwidth(device), matmul_tflops(device)
    print(f"Device: {torch.cuda.get_device_name(device)}; dtype {args.dtype}; "
          f"torch {torch.__version__}")
    print(f"Ceilings: device-to-device copy {bandwidth:.0f} GB/s (read + write), "
          f"bf16 matmul 8192^3 {tflops:.0f} TFLOP/s\n")
    print("| op | shape | backend | eager (us) | eager % | direct (us) | graph (us) | "
          "graph rate | graph % | unit | note |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    rows = []
    for work in workloads(dtype, device, args.quick):
        if wanted and work.op not in wanted:
            continue
        backends = [] if args.no_reference and work.op != "linear" else ["reference"]
        for backend in backends + impls(work.op, "cuda"):
            rows.append(measure(work, backend, bandwidth, tflops))
            print(format_row(rows[-1]), flush=True)
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"copy_gbps": bandwidth, "matmul_tflops": tflops,
                       "rows": [asdict(r) for r in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
