# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Shared fixtures: tiny random-weight HF checkpoints (Llama, Qwen2, Qwen3) saved as safetensors.

`tiny_checkpoint(family)` returns a folder with config.json, model.safetensors (float32), and a
byte-level tokenizer (256 byte tokens + chat specials) with a ChatML chat template, so both the
model runner and end-to-end engine tests can load it. Weights use initializer_range 0.3 and
randomised norm scales and biases, so greedy outputs vary and every parameter matters.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

TINY_VOCAB = 259  # = tokenizer size: 256 byte tokens + 3 specials
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# family -> (transformers config class name, family-specific config overrides)
TINY_FAMILIES: dict[str, tuple[str, dict]] = {
    "llama": ("LlamaConfig", {
        "tie_word_embeddings": True,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
    }),
    "llama-linear": ("LlamaConfig", {
        "tie_word_embeddings": False, "attention_bias": True, "mlp_bias": True,
        "rope_scaling": {"rope_type": "linear", "factor": 2.0},
    }),
    "qwen2": ("Qwen2Config", {"tie_word_embeddings": False}),
    "qwen3": ("Qwen3Config", {
        "tie_word_embeddings": False, "head_dim": 32,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
    }),
}


def _tiny_config(family: str):
    import transformers

    class_name, overrides = TINY_FAMILIES[family]
    common = dict(
        vocab_size=TINY_VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rms_norm_eps=1e-6, initializer_range=0.3, bos_token_id=257, eos_token_id=258,
        pad_token_id=256,
    )
    return getattr(transformers, class_name)(**{**common, **overrides})


def _save_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    byte_chars = list(bytes_to_unicode().values())
    vocab = {ch: i for i, ch in enumerate(byte_chars)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIAL_TOKENS)  # ids 256, 257, 258
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", unk_token=None)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(folder))


def build_tiny_checkpoint(family: str, folder: Path, seed: int = 0) -> Path:
    """Saves a tiny random `family` model (float32 safetensors + tokenizer) into `folder`."""
    import transformers

    config = _tiny_config(family)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:
                param.copy_(1.0 + 0.2 * torch.randn_like(param))
            elif name.endswith(".bias"):
                param.copy_(0.3 * torch.randn_like(param))
    model.save_pretrained(str(folder))
    _save_tokenizer(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Factory fixture: `tiny_checkpoint(family) -> folder`, built once per session.

    Families: "llama" (tied embeddings, llama3 RoPE), "llama-linear" (linear RoPE, q/k/v/o and
    MLP biases), "qwen2" (q/k/v bias), "qwen3" (q/k norm, yarn RoPE, head_dim 32 != H / heads).
    """
    built: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in TINY_FAMILIES:
            raise ValueError(f"family: {family!r} not in {sorted(TINY_FAMILIES)}")
        if family not in built:
            built[family] = build_tiny_checkpoint(family, tmp_path_factory.mktemp(f"tiny-{family}"))
        return built[family]

    return get
