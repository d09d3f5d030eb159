# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Sweep of the triton decode-attention launch parameters, kernel-only (CUDA-graph replay).

    python packages/deepinfer-kernels/benchmarks/tune_decode.py [--before DIR]

Times `backends/triton/decode_attention.py` for every `DecodeConfig` of a small grid
(BLOCK_N x num_warps x num_stages) at batch 64 x 2048 and batch 8 x 8192 keys (Llama-3-8B
heads: 32 q / 8 KV of 128, bf16, block size 16, split 256), checks each output against the
`reference` backend (relative L2 error) and prints the fraction of the measured copy
bandwidth. With `--before DIR` (a directory holding an older copy of the triton backend's
`decode_attention.py` and `rotary.py`) it times those too, on the same inputs, so a change
can be compared within one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import sys
from pathlib import Path

import torch

from deepinfer_kernels import ops
from deepinfer_kernels.backends.triton import decode_attention, rotary

sys.path.insert(0, str(Path(__file__).parent))
from bench_ops import copy_bandwidth, paged_cache, time_graph  # noqa: E402

Q_HEADS, KV_HEADS, HEAD, BLOCK, SPLIT = 32, 8, 128, 16, 256
CONFIGS = [decode_attention.DecodeConfig(n, w, s)
           for n, w, s in itertools.product((32, 64, 128), (4, 8), (2, 3, 4))]
CONFIGS += [decode_attention.DecodeConfig(32, 2, 3), decode_attention.DecodeConfig(64, 2, 3),
            decode_attention.DecodeConfig(16, 4, 4)]


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm())


def decode_inputs(batch: int, context: int):
    k_cache, v_cache, table = paged_cache([context] * batch, KV_HEADS, HEAD, BLOCK,
                                          torch.bfloat16, "cuda")
    q = torch.randn(batch, Q_HEADS, HEAD, dtype=torch.bfloat16, device="cuda")
    seq = torch.full((batch,), context, dtype=torch.int32, device="cuda")
    return (q, k_cache, v_cache, table, seq, HEAD ** -0.5, None, None, SPLIT)


def sweep_decode(batch: int, context: int, bandwidth: float, before) -> None:
    args = decode_inputs(batch, context)
    ref = ops.paged_attention_decode(*args[:8], split_size=SPLIT, backend="reference")
    nbytes = 2 * batch * context * KV_HEADS * HEAD * 2
    print(f"\n### decode B{batch} ctx{context} ({nbytes / 1e6:.0f} MB of K+V)\n")
    print("| version | BLOCK_N | warps | stages | graph (us) | GB/s | of copy | rel err |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    variants = [("before", None)] if before is not None else []
    variants += [("new", cfg) for cfg in CONFIGS]
    best = None
    for name, cfg in variants:
        if cfg is None:
            fn = lambda: before.paged_attention_decode(*args)           # noqa: E731
            label = "| before | 64 | 4 | default |"
        else:
            fn = lambda cfg=cfg: decode_attention.paged_attention_decode(*args, config=cfg)
            label = f"| new | {cfg.block_n} | {cfg.num_warps} | {cfg.num_stages} |"
        try:
            out = fn()
            err = rel_err(out, ref)
            us = time_graph([fn], calls=20)
        except Exception as exc:                         # a config that does not compile
            print(f"{label} failed: {type(exc).__name__}: {str(exc)[:80]} | | | |")
            continue
        gbps = nbytes / us / 1e3
        print(f"{label} {us:.1f} | {gbps:.0f} | {100 * gbps / bandwidth:.1f}% | {err:.1e} |",
              flush=True)
        if cfg is not None and err < 2e-2 and (best is None or us < best[0]):
            best = (us, cfg)
    if best:
        print(f"\nbest: {best[1]} at {best[0]:.1f} us")


def compare_rotary(tokens: int, bandwidth: float, before) -> None:
    cos_sin = ops.build_rope_cache(HEAD, 8192, 500000.0, None, torch.float32, "cuda")
    pos = torch.randint(0, 8192, (tokens,), device="cuda")
    q = torch.randn(tokens, Q_HEADS, HEAD, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(tokens, KV_HEADS, HEAD, dtype=torch.bfloat16, device="cuda")
    nbytes = 2 * tokens * (Q_HEADS + KV_HEADS) * HEAD * 2
    new_q, new_k = rotary.rotary_embedding(pos, q, k, cos_sin, True)
    old_q, old_k = before.rotary_embedding(pos, q, k, cos_sin, True)
    same = torch.equal(new_q, old_q) and torch.equal(new_k, old_k)
    for name, mod in (("before", before), ("new", rotary)):
        us = time_graph([lambda mod=mod: mod.rotary_embedding(pos, q, k, cos_sin, True)],
                        calls=20)
        gbps = nbytes / us / 1e3
        print(f"| rotary T{tokens} | {name} | {us:.1f} | {gbps:.0f} | "
              f"{100 * gbps / bandwidth:.1f}% | bitwise equal: {same} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="", help="directory of an older triton backend")
    args = parser.parse_args()
    bandwidth = copy_bandwidth(torch.device("cuda"))
    print(f"copy bandwidth {bandwidth:.0f} GB/s (read + write)")
    before_decode = before_rotary = None
    if args.before:
        before_decode = load_module(Path(args.before) / "decode_attention.py", "before_decode")
        before_rotary = load_module(Path(args.before) / "rotary.py", "before_rotary")
    for batch, context in ((64, 2048), (8, 8192)):
        sweep_decode(batch, context, bandwidth, before_decode)
    if before_rotary is not None:
        print("\n| op | version | graph (us) | GB/s | of copy | |\n|---|---|---:|---:|---:|---|")
        for tokens in (8192, 256):
            compare_rotary(tokens, bandwidth, before_rotary)


if __name__ == "__main__":
    main()
