# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""A tiny random HF target with a byte-level chat tokenizer, for tests and CPU smoke runs.

`build_tiny_target(folder)` saves a Qwen3 causal LM (hidden 64, 4 layers, vocabulary 259 =
256 byte tokens + 3 ChatML specials) in float32 safetensors, with a tokenizer and a ChatML chat
template, so both HF transformers and `deepinfer_core.LLM` load it.
"""

from __future__ import annotations

from pathlib import Path

import torch

SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")   # ids 256, 257, 258
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def build_tiny_target(folder: str | Path, seed: int = 0, num_layers: int = 4) -> Path:
    """Writes the tiny target into `folder` (created) and returns it.

    Weights are drawn with `initializer_range` 0.3 and random norm scales, so greedy replies
    differ between prompts.
    """
    import transformers

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = transformers.Qwen3Config(
        vocab_size=256 + len(SPECIALS), hidden_size=64, intermediate_size=128, num_hidden_layers=num_layers,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=512,
        rms_norm_eps=1e-6, initializer_range=0.3, tie_word_embeddings=False,
        bos_token_id=257, eos_token_id=258, pad_token_id=256)
    generator = torch.Generator().manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator)
            param.copy_(1.0 + 0.2 * noise if "norm" in name else 0.3 * noise)
    model.save_pretrained(str(folder))
    _save_byte_tokenizer(folder)
    return folder


def _save_byte_tokenizer(folder: Path) -> None:
    """A byte-level BPE without merges (one token per byte) plus the ChatML specials."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    vocab = {ch: i for i, ch in enumerate(bytes_to_unicode().values())}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(list(SPECIALS))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=SPECIALS[1], eos_token=SPECIALS[2],
                                   pad_token=SPECIALS[0], unk_token=None)
    fast.chat_template = CHATML
    fast.save_pretrained(str(folder))
