# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What a paused DSpark engine costs over an engine without speculation.

While confidence scheduling pauses drafting (plain decoding wins at the load), each step is a
plain decode step plus the proposer's bookkeeping: the target's feature layers come out of the
step, the core hands them to the proposer, which buffers them (`PendingContext`) for when drafting
resumes. On the H200 a paused engine ran 4-16% below plain decoding (BENCHMARKS.md, session 10).
This script splits that cost, with engines alive at once and paired rounds (as
`bench_dspark.py --interleave`):

  - `none`: no speculation;
  - `none-again`: a second engine without speculation: its paired ratio to `none` is the noise
    floor of the others';
  - `paused`: DSpark with confidence scheduling and a decode profile under which drafting can
    never pay from 2 requests up (`cannot_pay`), so every step at 2+ requests is a paused round
    (at 1 request it could pay, so the proposer does not retire);
  - `paused-blind`: `paused` with the proposer's `observe_step` replaced by a no-op: the features
    still come out of the step but are dropped (what is left is the engine's side).

The drafter has random weights (paused, it never drafts at these loads): built here for the
target's config (an HF folder), or given with --drafter. Then a `torch.profiler` table and a
cProfile of the engine thread, per variant, at --profile-at.

Usage (GPU machine, repository root):
    python3 packages/deepinfer-dspark/benchmarks/bench_paused.py --target HF_FOLDER \
        --concurrency 8 32 128 --rounds 5 --out $OUT/paused.md --torch-profile $OUT/torch.txt
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import tempfile
from pathlib import Path

from bench_dspark import paired_rows, table, write_table
from engine_probes import profile_run, torch_profile_run


def scratch_dir(prefix: str) -> Path:
    """A fresh temporary folder that is removed when this process exits normally (a benchmark's
    made-up target or drafter: the engines have read it by then); one killed by a signal leaves it."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, True)
    return path


def random_drafter(target: Path, block_size: int, out: Path | None = None) -> Path:
    """A one-layer DSpark drafter with random weights for the HF target folder `target`, saved
    in `out` (default: a new temporary folder that is kept, for use by another process)."""
    import torch

    from deepinfer_dspark.train.features import default_target_layer_ids
    from deepinfer_dspark.train.model import drafter_config, init_drafter, save_checkpoint

    config = json.loads((target / "config.json").read_text())
    layers = default_target_layer_ids(config["num_hidden_layers"])
    drafter = drafter_config(config, num_layers=1, block_size=block_size, target_layer_ids=layers, mask_token_id=0)
    shape = (config["vocab_size"], config["hidden_size"])
    model = init_drafter(drafter, torch.randn(shape) * 0.02, torch.randn(shape) * 0.02)
    return save_checkpoint(model, drafter, out or Path(tempfile.mkdtemp(prefix="dspark-random-")))


def variants(drafter: str, k: int, spec_sps) -> dict:
    from deepinfer_dspark.sps import SPSProfile

    # 1 step/s alone (drafting could pay: no retirement), 10^7 from 2 requests (it never can).
    never = SPSProfile([1, 2, 1 << 20], [1.0, 1e7, 1e7])
    paused = {"method": "dspark", "model": drafter, "num_speculative_tokens": k, "scheduling": "confidence",
              "sps_profile": spec_sps, "decode_profile": never, "prompt_lookup_min": 0}   # DSpark alone
    return {"none": None, "none-again": None, "paused": paused, "paused-blind": paused}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="target HF folder (or GGUF with --drafter)")
    parser.add_argument("--drafter", default=None, help="DSpark checkpoint folder; default: random, built here")
    parser.add_argument("--spec-sps", default=None, help="speculative-round SPS profile JSON; default: flat")
    parser.add_argument("--k", type=int, default=7, help="drafts per round (the drafter's block size)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--rounds", type=int, default=5, help="paired rounds per concurrency")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--kv-cache-gib", type=float, default=8.0, help="KV cache per engine, GiB")
    parser.add_argument("--out", type=Path, default=None, help="markdown table path")
    parser.add_argument("--torch-profile", type=Path, default=None, help="torch.profiler tables (appended)")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile tables of the engine thread (appended)")
    parser.add_argument("--profile-at", type=int, nargs="+", default=[32], metavar="C")
    args = parser.parse_args()

    from deepinfer_core import LLM, SamplingParams
    from deepinfer_dspark.sps import SPSProfile
    from deepinfer_dspark.train.data import build_prompts, stdlib_docstrings

    drafter = args.drafter or str(random_drafter(Path(args.target), args.k, scratch_dir("dspark-random-")))
    spec_sps = SPSProfile.load(args.spec_sps) if args.spec_sps else SPSProfile([1, 1 << 20], [500.0, 500.0])
    engine_kw = {"kv_cache_memory": int(args.kv_cache_gib * (1 << 30)), "max_num_seqs": max(args.concurrency)}
    llms = {name: LLM(args.target, speculative_config=spec, **engine_kw)
            for name, spec in variants(drafter, args.k, spec_sps).items()}
    blind = llms["paused-blind"].engine.speculative.proposer
    blind.observe_step = lambda *a, **kw: None   # the core finds this attribute first: features dropped
    pool = [[{"role": "user", "content": p}] for p in build_prompts(stdlib_docstrings(max(args.concurrency), seed=12345))]
    params = SamplingParams(temperature=0, max_tokens=args.max_tokens)
    rows = []
    for c in args.concurrency:
        for llm in llms.values():
            llm.chat(pool[:c], params)   # warm-up, excluded
        rows += paired_rows(llms, pool[:c], params, args.rounds, c)
        write_table(rows, args.out)
    skipped = llms["paused"].engine.speculative.proposer.skipped_rounds
    print(f"paused: {skipped} rounds skipped by the proposer", flush=True)
    for c in args.profile_at:
        for name, llm in llms.items():
            if args.torch_profile is not None:
                torch_profile_run(llm, pool[:c], args.max_tokens, f"{name} at {c}", args.torch_profile)
            if args.profile is not None:
                profile_run(llm, pool[:c], args.max_tokens, f"{name} at {c}", args.profile)
    for llm in llms.values():
        llm.close()
    print("\n".join(table(rows)))


if __name__ == "__main__":
    main()
