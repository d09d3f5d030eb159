# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Random weights for an HF causal-LM folder that holds only `config.json` and tokenizer files,
so that timing benchmarks (`bench_paused.py`, `train_step_profile.py`) run a model of the real
shape without its checkpoint (the device machine reaches no model hub, and a GGUF of 98 MB
travels there in two calls).

The weights are drawn by transformers' own initialisation (`AutoModelForCausalLM.from_config`,
seeded) and written as `model.safetensors` in the config's dtype. A step's time does not depend
on the values; the replies are noise, so benchmarks of random targets set `ignore_eos` or count
what was emitted.

Usage:
    python3 packages/deepinfer-dspark/benchmarks/random_target.py FOLDER [--seed 0]
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="HF folder with config.json (weights are written into it)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not (args.folder / "config.json").is_file():
        parser.error(f"folder: {args.folder} has no config.json")

    import torch
    import transformers

    torch.manual_seed(args.seed)
    config = transformers.AutoConfig.from_pretrained(str(args.folder))
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=getattr(config, "torch_dtype", None))
    model.save_pretrained(str(args.folder), safe_serialization=True)
    count = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.folder / 'model.safetensors'}: {count / 1e6:.1f} M random parameters", flush=True)


if __name__ == "__main__":
    main()
