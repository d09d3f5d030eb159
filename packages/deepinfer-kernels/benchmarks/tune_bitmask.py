# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Sweep of the triton `apply_token_bitmask` launch parameters, kernel-only (CUDA-graph replay).

    python packages/deepinfer-kernels/benchmarks/tune_bitmask.py

Times `backends/triton/bitmask.py` for every `BitmaskConfig` of a small grid (words per
program x warps x load/store or store-only) on B64 x V128256 (bf16 and fp32 logits) and
B64 x V49152 fp32 (SmolLM2's vocabulary, as the engine holds its logits), with random masks
(half the tokens allowed) and sparse ones (1 in 64 allowed, like most JSON positions). Each
output is checked bitwise against the `reference` backend. Bandwidth is reported two ways:
bytes the op must move at least (the logits once, plus the mask) and bytes the variant moves
(load/store: the logits twice), each as a fraction of the measured copy bandwidth (which
counts bytes read plus bytes written).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import torch

from deepinfer_kernels.backends.reference import bitmask as reference
from deepinfer_kernels.backends.triton import bitmask

sys.path.insert(0, str(Path(__file__).parent))
from bench_ops import copy_bandwidth, time_graph  # noqa: E402

CONFIGS = [bitmask.BitmaskConfig(w, n, s)
           for w, n, s in itertools.product((16, 32, 64, 128), (4, 8), (False, True))]
SHAPES = [(64, 128256, torch.bfloat16), (64, 128256, torch.float32), (64, 49152, torch.float32)]


def masks(rows: int, words: int, sparse: bool) -> torch.Tensor:
    bits = torch.randint(-2**31, 2**31, (rows, words), dtype=torch.int32, device="cuda")
    if sparse:   # about 1 token in 64 allowed
        bits &= torch.randint(-2**31, 2**31, (rows, words), dtype=torch.int32, device="cuda")
        bits &= torch.randint(-2**31, 2**31, (rows, words), dtype=torch.int32, device="cuda")
        bits &= torch.randint(-2**31, 2**31, (rows, words), dtype=torch.int32, device="cuda")
        bits &= torch.randint(-2**31, 2**31, (rows, words), dtype=torch.int32, device="cuda")
        bits &= torch.randint(-2**31, 2**31, (rows, words), dtype=torch.int32, device="cuda")
    return bits


def sweep(rows: int, vocab: int, dtype: torch.dtype, sparse: bool, bandwidth: float) -> None:
    words = -(-vocab // 32)
    logit_bytes = rows * vocab * torch.tensor([], dtype=dtype).element_size()
    copies = max(2, -(-(160 << 20) // logit_bytes))          # rotate inputs beyond the 60 MB L2
    sets = [(torch.randn(rows, vocab, dtype=dtype, device="cuda"), masks(rows, words, sparse))
            for _ in range(copies)]
    want = sets[0][0].clone()
    reference.apply_token_bitmask(want, sets[0][1], None)
    least = logit_bytes + rows * words * 4
    label = f"B{rows} V{vocab} {str(dtype).removeprefix('torch.')} {'sparse' if sparse else 'half'}"
    best = None
    for cfg in CONFIGS:
        got = sets[0][0].clone()
        bitmask.apply_token_bitmask(got, sets[0][1], None, cfg)
        same = torch.equal(got, want)
        fns = [lambda x=x, m=m, cfg=cfg: bitmask.apply_token_bitmask(x, m, None, cfg) for x, m in sets]
        us = time_graph(fns, calls=4 * len(fns))
        moved = least + (0 if cfg.store_only else logit_bytes)
        print(f"| {label} | words {cfg.words} warps {cfg.num_warps} {'store-only' if cfg.store_only else 'load/store'} "
              f"| {us:.2f} | {100 * least / us / 1e3 / bandwidth:.1f}% | {100 * moved / us / 1e3 / bandwidth:.1f}% "
              f"| {'ok' if same else 'MISMATCH'} |", flush=True)
        if same and (best is None or us < best[0]):
            best = (us, cfg)
    print(f"best for {label}: {best[1]} at {best[0]:.2f} us "
          f"({100 * least / best[0] / 1e3 / bandwidth:.1f}% of copy, least bytes)\n", flush=True)


def main() -> None:
    bandwidth = copy_bandwidth(torch.device("cuda"))
    print(f"copy bandwidth {bandwidth:.0f} GB/s (read + write); {torch.cuda.get_device_name()}")
    print("| shape | config | graph (us) | least bytes / copy | moved bytes / copy | vs reference |")
    print("|---|---|---:|---:|---:|---|")
    for (rows, vocab, dtype), sparse in itertools.product(SHAPES, (False, True)):
        sweep(rows, vocab, dtype, sparse, bandwidth)


if __name__ == "__main__":
    main()
