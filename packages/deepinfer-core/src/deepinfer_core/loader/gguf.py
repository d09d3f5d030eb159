# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Single-file GGUF checkpoints (llama.cpp format) read with the `gguf` library.

Metadata becomes an HF-style config dict; tensors are dequantized to float32 and renamed to HF
names. llama.cpp's converter permutes the rows of Q and K for the `llama` architecture (it
stores each head's rotary pairs interleaved); we undo that so the HF "rotate half" RoPE applies.
Facts checked against transformers' GGUF loader (modeling_gguf_pytorch_utils.py, integrations/ggml.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize

from deepinfer_core.config import ModelConfig

GGUF_ARCHITECTURES: dict[str, str] = {
    "llama": "LlamaForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
}

# GGUF tensor name (without the "blk.N." prefix and suffix) -> HF module path
_GLOBAL_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
_BLOCK_NAMES = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_BLOCK_RE = re.compile(r"blk\.(\d+)\.(\w+)\.(weight|bias)")


class GGUFCheckpoint:
    """A GGUF file opened for reading (memory-mapped; tensors are read lazily).

    Args:
        path: the `.gguf` file.

    Raises:
        ValueError: the file cannot be parsed, or its architecture is not supported (the
            message names `model`).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.reader = GGUFReader(str(self.path))
        except Exception as exc:  # the gguf library raises ValueError/OSError/struct errors
            raise ValueError(f"model: {self.path} is not a readable GGUF file: {exc}") from exc
        self.arch = str(self.field("general.architecture", ""))
        if self.arch not in GGUF_ARCHITECTURES:
            raise ValueError(f"model: GGUF architecture {self.arch!r} is not supported; "
                             f"supported: {sorted(GGUF_ARCHITECTURES)}")
        self.tensor_names = {t.name for t in self.reader.tensors}

    def field(self, key: str, default: Any = None) -> Any:
        """The decoded value of a metadata key, or `default` when absent."""
        f = self.reader.get_field(key)
        return default if f is None else f.contents()

    def required_int(self, key: str) -> int:
        """An integer metadata value that must be present.

        Raises:
            ValueError: the key is missing or not an integer (names `model` and the key).
        """
        value = self.field(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"model: {self.path} GGUF metadata lacks integer field '{key}', got {value!r}")
        return value

    def hf_config(self) -> dict[str, Any]:
        """The metadata as an HF `config.json`-style dict."""
        a = self.arch
        heads = self.required_int(f"{a}.attention.head_count")
        hidden = self.required_int(f"{a}.embedding_length")
        vocab = self.field(f"{a}.vocab_size") or len(self.field("tokenizer.ggml.tokens", []))
        config: dict[str, Any] = {
            "architectures": [GGUF_ARCHITECTURES[a]],
            "model_type": a,
            "vocab_size": int(vocab),
            "hidden_size": hidden,
            "intermediate_size": self.required_int(f"{a}.feed_forward_length"),
            "num_hidden_layers": self.required_int(f"{a}.block_count"),
            "num_attention_heads": heads,
            "num_key_value_heads": int(self.field(f"{a}.attention.head_count_kv", heads)),
            "head_dim": int(self.field(f"{a}.attention.key_length", hidden // heads)),
            "rms_norm_eps": float(self.field(f"{a}.attention.layer_norm_rms_epsilon", 1e-6)),
            "rope_theta": float(self.field(f"{a}.rope.freq_base", 10000.0)),
            "max_position_embeddings": int(self.field(f"{a}.context_length", 4096)),
            "tie_word_embeddings": "output.weight" not in self.tensor_names,
            "attention_bias": "blk.0.attn_output.bias" in self.tensor_names,
            "mlp_bias": "blk.0.ffn_up.bias" in self.tensor_names,
            "bos_token_id": self.field("tokenizer.ggml.bos_token_id"),
            "eos_token_id": self.field("tokenizer.ggml.eos_token_id"),
            "dtype": "float32",
        }
        scaling = self._rope_scaling()
        if scaling is not None:
            config["rope_scaling"] = scaling
        return config

    def _rope_scaling(self) -> dict[str, Any] | None:
        a = self.arch
        if "rope_freqs.weight" in self.tensor_names:
            # llama.cpp stores llama3-style scaling as per-frequency factors; not mapped yet.
            raise ValueError(f"model: {self.path} uses GGUF rope_freqs (llama3 rope scaling), which is not supported")
        kind = self.field(f"{a}.rope.scaling.type", "none")
        if kind in ("none", None):
            return None
        factor = float(self.field(f"{a}.rope.scaling.factor", 1.0))
        if kind == "linear":
            return {"rope_type": "linear", "factor": factor}
        if kind == "yarn":
            original = int(self.field(f"{a}.rope.scaling.original_context_length"))
            return {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original}
        raise ValueError(f"model: GGUF rope scaling type {kind!r} is not supported; supported: ['linear', 'yarn']")

    def model_config(self) -> ModelConfig:
        """The ModelConfig of this file (format "gguf")."""
        return ModelConfig.from_hf_dict(self.hf_config(), self.path, "gguf")

    @property
    def chat_template(self) -> str | None:
        """The Jinja chat template stored in the metadata, if any."""
        return self.field("tokenizer.chat_template")

    def iter_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """Yields `(HF name, float32 tensor)` for every tensor, dequantized one at a time.

        Raises:
            ValueError: an unknown tensor name or a quantization type `gguf` cannot dequantize.
        """
        config = self.hf_config()
        for tensor in self.reader.tensors:
            name = hf_tensor_name(tensor.name)
            try:
                values = dequantize(tensor.data, tensor.tensor_type)
            except NotImplementedError as exc:
                raise ValueError(f"model: tensor {tensor.name} has unsupported GGUF type "
                                 f"{tensor.tensor_type.name}") from exc
            values = np.array(values, dtype=np.float32)  # own copy: the file is a read-only memmap
            if self.arch == "llama" and ".q_proj." in name:
                values = unpermute_rotary_rows(values, config["num_attention_heads"])
            elif self.arch == "llama" and ".k_proj." in name:
                values = unpermute_rotary_rows(values, config["num_key_value_heads"])
            yield name, torch.from_numpy(np.ascontiguousarray(values))


def hf_tensor_name(gguf_name: str) -> str:
    """Maps a GGUF tensor name (e.g. `blk.3.attn_q.weight`) to its HF name.

    Raises:
        ValueError: the name is not one of the dense decoder's tensors.
    """
    base, _, suffix = gguf_name.rpartition(".")
    if base in _GLOBAL_NAMES:
        return f"{_GLOBAL_NAMES[base]}.{suffix}"
    match = _BLOCK_RE.fullmatch(gguf_name)
    if match is None or match.group(2) not in _BLOCK_NAMES:
        raise ValueError(f"model: unexpected GGUF tensor {gguf_name!r}")
    layer, part, suffix = match.groups()
    return f"model.layers.{layer}.{_BLOCK_NAMES[part]}.{suffix}"


def unpermute_rotary_rows(w: np.ndarray, num_heads: int) -> np.ndarray:
    """Undoes llama.cpp's Q/K row permutation.

    Per head, llama.cpp reorders the D output rows from `[first half, second half]` to
    interleaved pairs `(0, D/2), (1, D/2+1), ...`. Rows are viewed as `[heads, D/2, 2]` and
    transposed back to `[heads, 2, D/2]`.

    Args:
        w: `[num_heads * D, ...]` weight (or bias) rows as stored in the GGUF.
        num_heads: heads in this projection (query heads for Q, KV heads for K).
    """
    half = w.shape[0] // num_heads // 2
    return w.reshape(num_heads, half, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
