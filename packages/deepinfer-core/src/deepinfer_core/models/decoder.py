# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The Llama-style dense decoder shared by the Llama, Qwen2 and Qwen3 families.

Pre-norm blocks (Touvron et al. 2023, "LLaMA"): RMSNorm -> GQA attention with RoPE -> residual
-> RMSNorm -> SwiGLU MLP -> residual. Families differ only in flags: q/k/v bias (Qwen2) and
per-head RMSNorm on q and k before RoPE (Qwen3). Parameter names follow HF checkpoints, with
q/k/v fused into `qkv_proj` and gate/up into `gate_up_proj` (see `STACKED_PARAMS`).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from deepinfer_core.config import ModelConfig
from deepinfer_core.executor.attention_metadata import AttentionMetadata
from deepinfer_core.layers.activation import SiluAndMul
from deepinfer_core.layers.attention import PagedAttention
from deepinfer_core.layers.embedding import VocabEmbedding
from deepinfer_core.layers.linear import Linear, MergedLinear, copy_checked
from deepinfer_core.layers.logits import LMHead
from deepinfer_core.layers.norm import RMSNorm
from deepinfer_core.layers.rotary import RotaryEmbedding

KVCache = tuple[torch.Tensor, torch.Tensor]

# checkpoint projection name -> (our fused parameter's module, shard index)
STACKED_PARAMS: dict[str, tuple[str, int]] = {
    "q_proj": ("qkv_proj", 0),
    "k_proj": ("qkv_proj", 1),
    "v_proj": ("qkv_proj", 2),
    "gate_proj": ("gate_up_proj", 0),
    "up_proj": ("gate_up_proj", 1),
}


class DecoderAttention(nn.Module):
    """Self-attention of one block: fused qkv -> [q/k norm] -> RoPE -> paged attention -> o_proj.

    Shapes: positions `[T]`, hidden `[T, H]` -> `[T, H]`.
    """

    def __init__(self, cfg: ModelConfig, rotary: RotaryEmbedding, qk_norm: bool, dtype: torch.dtype,
                 device: torch.device | str) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        q_size, kv_size = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        self.qkv_proj = MergedLinear(cfg.hidden_size, [q_size, kv_size, kv_size], cfg.qkv_bias, dtype, device)
        self.o_proj = Linear(q_size, cfg.hidden_size, cfg.o_bias, dtype, device)
        self.q_norm = RMSNorm(self.head_dim, cfg.rms_norm_eps, dtype, device) if qk_norm else None
        self.k_norm = RMSNorm(self.head_dim, cfg.rms_norm_eps, dtype, device) if qk_norm else None
        self.rotary = rotary  # one module (one cos/sin cache) shared by every layer
        self.attn = PagedAttention(self.num_heads, self.num_kv_heads, self.head_dim, self.head_dim**-0.5)

    def forward(self, positions: torch.Tensor, hidden: torch.Tensor, kv_cache: KVCache,
                meta: AttentionMetadata) -> torch.Tensor:
        q, k, v = self.qkv_proj.split(self.qkv_proj(hidden))
        q = q.reshape(-1, self.num_heads, self.head_dim)
        k = k.reshape(-1, self.num_kv_heads, self.head_dim)
        v = v.reshape(-1, self.num_kv_heads, self.head_dim)
        q, k = self.rotary(positions, q, k, self.q_norm, self.k_norm)  # q/k norms (Qwen3) fused in
        out = self.attn(q, k, v, kv_cache, meta)
        return self.o_proj(out.reshape(-1, self.num_heads * self.head_dim))


class DecoderMLP(nn.Module):
    """SwiGLU feed-forward: `down(silu(gate(x)) * up(x))`. Shapes: `[T, H]` -> `[T, H]`."""

    def __init__(self, cfg: ModelConfig, dtype: torch.dtype, device: torch.device | str) -> None:
        super().__init__()
        inter = cfg.intermediate_size
        self.gate_up_proj = MergedLinear(cfg.hidden_size, [inter, inter], cfg.mlp_bias, dtype, device)
        self.act = SiluAndMul()
        self.down_proj = Linear(inter, cfg.hidden_size, cfg.mlp_bias, dtype, device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act(self.gate_up_proj(x)))


class DecoderLayer(nn.Module):
    """One pre-norm block; carries the residual stream separately so norms can fuse the add."""

    def __init__(self, cfg: ModelConfig, rotary: RotaryEmbedding, qk_norm: bool, dtype: torch.dtype,
                 device: torch.device | str) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype, device)
        self.self_attn = DecoderAttention(cfg, rotary, qk_norm, dtype, device)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype, device)
        self.mlp = DecoderMLP(cfg, dtype, device)

    def forward(self, positions: torch.Tensor, hidden: torch.Tensor, residual: torch.Tensor | None,
                kv_cache: KVCache, meta: AttentionMetadata) -> tuple[torch.Tensor, torch.Tensor]:
        if residual is None:
            hidden, residual = self.input_layernorm(hidden), hidden
        else:
            hidden, residual = self.input_layernorm(hidden, residual)
        hidden = self.self_attn(positions, hidden, kv_cache, meta)
        hidden, residual = self.post_attention_layernorm(hidden, residual)
        return self.mlp(hidden), residual


class DecoderModel(nn.Module):
    """Embedding -> N decoder layers -> final norm. Registered as `model` (HF prefix `model.`)."""

    def __init__(self, cfg: ModelConfig, qk_norm: bool, dtype: torch.dtype, device: torch.device | str) -> None:
        super().__init__()
        self.embed_tokens = VocabEmbedding(cfg.vocab_size, cfg.hidden_size, dtype, device)
        self.rotary_emb = RotaryEmbedding(cfg.head_dim, cfg.max_position_embeddings, cfg.rope_theta,
                                          cfg.rope_scaling, True, device)
        self.layers = nn.ModuleList(
            DecoderLayer(cfg, self.rotary_emb, qk_norm, dtype, device) for _ in range(cfg.num_hidden_layers)
        )
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype, device)

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, kv_caches: list[KVCache],
                meta: AttentionMetadata, aux_layers: tuple[int, ...] = ()
                ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        hidden, residual = self.embed_tokens(input_ids), None
        aux = [hidden] if -1 in aux_layers else []
        for i, (layer, kv_cache) in enumerate(zip(self.layers, kv_caches, strict=True)):
            hidden, residual = layer(positions, hidden, residual, kv_cache, meta)
            if i in aux_layers:
                aux.append(hidden + residual)  # the residual stream after layer i (HF hidden_states[i + 1])
        hidden, _ = self.norm(hidden, residual)
        return (hidden, torch.cat(aux, dim=-1)) if aux_layers else hidden


class DecoderForCausalLM(nn.Module):
    """A dense decoder-only LM; subclasses (one per family) set the flags below.

    Class attributes:
        architectures: HF `architectures` names this class serves.
        qk_norm: per-head RMSNorm on q and k (Qwen3).

    Args:
        cfg: the model architecture.
        dtype: parameter and activation dtype.
        device: where parameters live.
    """

    architectures: tuple[str, ...] = ()
    qk_norm: bool = False

    def __init__(self, cfg: ModelConfig, dtype: torch.dtype, device: torch.device | str) -> None:
        super().__init__()
        self.config = cfg
        self.model = DecoderModel(cfg, self.qk_norm, dtype, device)
        tied = self.model.embed_tokens if cfg.tie_word_embeddings else None
        self.lm_head = LMHead(cfg.vocab_size, cfg.hidden_size, tied, dtype, device)

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, kv_caches: list[KVCache],
                meta: AttentionMetadata, aux_layers: tuple[int, ...] = ()
                ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Runs the decoder. Shapes: input_ids/positions `[T]` int64 -> hidden `[T, H]`.

        With `aux_layers` (ascending decoder-layer indices; -1 = the embedding output), also
        returns the residual stream after each of those layers, concatenated: `[T, len * H]`
        (what HF returns as `hidden_states[i + 1]`; speculative drafters such as DSpark and
        EAGLE-3 read these features).
        """
        return self.model(input_ids, positions, kv_caches, meta, aux_layers)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Shapes: hidden `[N, H]` -> logits `[N, V]` float32."""
        return self.lm_head(hidden)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Loads HF-named checkpoint tensors; q/k/v and gate/up go into their fused shards.

        Raises:
            ValueError: an unknown tensor name, a shape mismatch, or parameters the
                checkpoint never provided (the message names them).
        """
        params = dict(self.named_parameters())
        loaded: set[str] = set()
        for name, tensor in weights:
            if self._skip(name):
                continue
            module_path, _, param_name = name.rpartition(".")
            parent, _, proj = module_path.rpartition(".")
            shard = None
            if proj in STACKED_PARAMS:
                fused, shard = STACKED_PARAMS[proj]
                module_path = f"{parent}.{fused}"
            target = f"{module_path}.{param_name}"
            if target not in params:
                raise ValueError(f"weights: checkpoint tensor {name!r} has no matching parameter")
            module = self.get_submodule(module_path)
            if hasattr(module, "load_weight"):
                module.load_weight(param_name, tensor, shard)
            else:
                copy_checked(params[target], tensor, name)
            loaded.add(target if shard is None else f"{target}#{shard}")
        self._check_complete(params, loaded)

    def _skip(self, name: str) -> bool:
        # Tied heads reuse the embedding; rotary buffers are recomputed, never loaded.
        return (self.config.tie_word_embeddings and name == "lm_head.weight") or "rotary_emb.inv_freq" in name

    def _check_complete(self, params: dict[str, nn.Parameter], loaded: set[str]) -> None:
        missing = []
        for target in params:
            module = self.get_submodule(target.rpartition(".")[0])
            shards = getattr(module, "out_sizes", None)
            needed = [target] if shards is None else [f"{target}#{i}" for i in range(len(shards))]
            missing += [n for n in needed if n not in loaded]
        if missing:
            raise ValueError(f"weights: checkpoint lacks {len(missing)} parameters, e.g. {missing[:5]}")
