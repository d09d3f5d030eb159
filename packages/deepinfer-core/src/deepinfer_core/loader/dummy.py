# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`load_format="dummy"`: random weights for a config-only checkpoint (benchmarks, no downloads).

Weights follow the HF `PreTrainedModel._init_weights` convention for decoder LMs: matrices and
embeddings ~ normal(0, 0.02), RMSNorm weights 1, biases 0. A folder without tokenizer files
gets a placeholder tokenizer whose token i decodes to `<i>`, so token-id prompts work.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from deepinfer_core.layers.norm import RMSNorm

INIT_STD = 0.02
"""Standard deviation of HF's default `initializer_range`."""

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


@torch.no_grad()
def fill_dummy_weights(model: nn.Module, seed: int) -> None:
    """Overwrites every parameter of `model` in place with seeded HF-style initial values.

    Args:
        model: a built model (parameters on their final device and dtype).
        seed: seed of a generator on the parameters' device (same seed, same device -> same weights).
    """
    norm_params = {id(p) for m in model.modules() if isinstance(m, RMSNorm) for p in m.parameters()}
    generators: dict[torch.device, torch.Generator] = {}
    for name, param in model.named_parameters():
        if id(param) in norm_params:
            param.fill_(1.0)
        elif name.endswith(".bias"):
            param.zero_()
        else:
            gen = generators.get(param.device)
            if gen is None:
                gen = generators[param.device] = torch.Generator(device=param.device).manual_seed(seed)
            param.normal_(0.0, INIT_STD, generator=gen)


def has_tokenizer_files(folder: str | Path) -> bool:
    """True when `folder` is a `.gguf` file or a folder holding any of `TOKENIZER_FILES`."""
    path = Path(folder)
    if path.is_file():
        return path.suffix == ".gguf"
    return any((path / name).is_file() for name in TOKENIZER_FILES)


def placeholder_tokenizer(vocab_size: int, eos_token_id: int | None = None):
    """A word-level tokenizer of `vocab_size` tokens named `<0>` ... `<V-1>` (for dummy models).

    `len()` is `vocab_size` and token i decodes to `<i>` (tokens joined by spaces). Text prompts
    only encode these names; real text needs a real tokenizer.

    Returns:
        transformers.PreTrainedTokenizerFast.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    names = [f"<{i}>" for i in range(vocab_size)]
    unk = names[0]
    tok = Tokenizer(models.WordLevel(vocab={n: i for i, n in enumerate(names)}, unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins tokens with spaces
    eos = names[eos_token_id] if eos_token_id is not None and 0 <= eos_token_id < vocab_size else None
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, unk_token=unk)
