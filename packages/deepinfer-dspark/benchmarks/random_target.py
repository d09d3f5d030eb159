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

`--from-gguf FILE` first writes the folder's `config.json` (with `architectures`, which
transformers' GGUF reader leaves out) and tokenizer files from a GGUF checkpoint (transformers'
GGUF reader); `--config-only` stops there (a few MB to carry to the device machine, where the
weights are then drawn).

Usage:
    python3 packages/deepinfer-dspark/benchmarks/random_target.py FOLDER [--seed 0]
    python3 packages/deepinfer-dspark/benchmarks/random_target.py .cache/smollm2_shape \
        --from-gguf ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf --config-only
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="HF folder with config.json (weights are written into it)")
    parser.add_argument("--seed", type=int, default=0, help="weight draw seed (default 0)")
    parser.add_argument("--from-gguf", type=Path, default=None, help="write config.json and tokenizer from this GGUF")
    parser.add_argument("--config-only", action="store_true", help="with --from-gguf: write no weights")
    args = parser.parse_args()
    if args.from_gguf is not None and not args.from_gguf.is_file():
        parser.error(f"--from-gguf: {args.from_gguf} is not a file")
    if args.config_only and args.from_gguf is None:
        parser.error("--config-only: needs --from-gguf")
    if args.from_gguf is None and not (args.folder / "config.json").is_file():
        parser.error(f"folder: {args.folder} has no config.json")

    import torch
    import transformers

    if args.from_gguf is not None:
        write_config(args.folder, args.from_gguf)
        if args.config_only:
            return

    torch.manual_seed(args.seed)
    config = transformers.AutoConfig.from_pretrained(str(args.folder))
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=getattr(config, "torch_dtype", None))
    model.save_pretrained(str(args.folder), safe_serialization=True)
    count = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.folder / 'model.safetensors'}: {count / 1e6:.1f} M random parameters", flush=True)


def write_config(folder: Path, gguf: Path) -> None:
    """`config.json` (bf16, with its causal-LM architecture) and the tokenizer of `gguf` into `folder`."""
    import json

    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    folder.mkdir(parents=True, exist_ok=True)
    where, name = str(gguf.parent), gguf.name
    transformers.AutoTokenizer.from_pretrained(where, gguf_file=name).save_pretrained(str(folder))
    config = transformers.AutoConfig.from_pretrained(where, gguf_file=name).to_dict()
    config.pop("quantization_config", None)
    config["architectures"] = [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[config["model_type"]]]
    config["torch_dtype"] = "bfloat16"
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    print(f"wrote {folder / 'config.json'} and the tokenizer of {gguf}", flush=True)


if __name__ == "__main__":
    main()
