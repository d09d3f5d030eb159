# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Cost of batch invariance for `linear`: the default GEMM against the invariant backend.

    python packages/deepinfer-kernels/benchmarks/bench_batch_invariant.py [--threads 1]
        [--dtype float32] [--tokens 1,8,64] [--shapes 576x576,576x1536,1536x576]

On the CPU it compares `torch.nn.functional.linear` (MKL / oneDNN) with
`ops.linear(batch_invariant=True)` on the `cpu` backend, both through one Python call (the
op's argument checks and dispatch included). On a CUDA device it compares cuBLAS with the
`triton` backend, timing kernels with CUDA events. Prints a markdown table of the best of
five timing rounds; shapes are K x N (SmolLM2-135M: hidden 576, MLP 1536).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from deepinfer_kernels import ops


def best_time_us(fn, device: torch.device, calls: int = 50, rounds: int = 5) -> float:
    """Best-of-`rounds` mean time of one call, microseconds."""
    fn()
    best = float("inf")
    for _ in range(rounds):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--tokens", default="1,8,64")
    parser.add_argument("--shapes", default="576x576,576x1536,1536x576")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    backend = "triton" if device.type == "cuda" else "cpu"
    dtype = getattr(torch, args.dtype)
    gen = torch.Generator().manual_seed(0)
    print(f"| T | K | N | F.linear (us) | {backend} invariant (us) | F.linear / invariant |")
    print("|---|---|---|---|---|---|")
    for shape in args.shapes.split(","):
        k, n = (int(v) for v in shape.split("x"))
        weight = torch.randn(n, k, generator=gen).to(dtype).to(device)
        for tokens in (int(t) for t in args.tokens.split(",")):
            x = torch.randn(tokens, k, generator=gen).to(dtype).to(device)
            base = best_time_us(lambda: F.linear(x, weight), device)
            inv = best_time_us(lambda: ops.linear(x, weight, batch_invariant=True,
                                                  backend=backend), device)
            print(f"| {tokens} | {k} | {n} | {base:.1f} | {inv:.1f} | {base / inv:.2f} |")


if __name__ == "__main__":
    main()
