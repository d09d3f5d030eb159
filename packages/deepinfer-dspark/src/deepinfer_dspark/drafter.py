# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DSparkDrafter: the DSpark draft model (parallel backbone + Markov head + confidence head).

Architecture (Cheng et al. 2026, "DSpark", section 3; DFlash-style "KV injection", Chen et al.
2026, arXiv 2602.06036; parameter names follow DeepSpec's `Qwen3DSparkModel`):

  context   H_ctx = hidden_norm(fc([H^(l1); ...; H^(lm)]))       target features [n, m*d] -> [n, d]
            layer i's context keys/values: K = RoPE(k_norm(k_proj_i(H_ctx))), V = v_proj_i(H_ctx),
            at the context tokens' absolute positions (H_ctx does not pass through the layers,
            so the K/V of every layer can be computed once and cached).
  block     embed([x0, MASK, ..., MASK]) at positions s .. s+G-1 (x0: the anchor, s its position,
            G = block_size), through Qwen3-style layers: pre-RMSNorm attention with per-head
            q_norm/k_norm and RoPE, SwiGLU MLP, residuals; then the final `norm`.
  attention block queries see every context position before the anchor and every block
            position in both directions (no causal mask inside the block); layer i attends to
            [context K/V of layer i ; block K/V of layer i].
  outputs   h_k (final-normed hidden), base logits U_k = lm_head(h_k); the Markov head adds B_k
            (see `deepinfer_dspark.markov`), the confidence head reads [h_k ; W1[x_{k-1}]].

Everything here is functional and differentiable (a trainer may call `forward`); the
per-request caches and sampling live in `deepinfer_dspark.draft_runner`.
"""

from __future__ import annotations

import torch
from deepinfer_kernels import ops
from torch import nn

from deepinfer_dspark.confidence import ConfidenceHead
from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.markov import MarkovHead, build_markov_head


class RMSNorm(nn.Module):
    """`x * rsqrt(mean(x^2) + eps) * weight` over the last axis, by `ops.rms_norm`."""

    def __init__(self, size: int, eps: float, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size, dtype=dtype, device=device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """`[..., size]` -> same shape and dtype."""
        # The weight follows the input's dtype (bf16 autocast in training keeps fp32 master weights).
        return ops.rms_norm(x.reshape(-1, x.shape[-1]), self.weight.to(x.dtype), self.eps).reshape(x.shape)


class DraftAttention(nn.Module):
    """Attention of one draft layer over [its context K/V ; the block's K/V]."""

    def __init__(self, cfg: DSparkConfig, dtype: torch.dtype | None,
                 device: torch.device | str | None) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        d, q_size, kv_size = cfg.hidden_size, self.num_heads * cfg.head_dim, self.num_kv_heads * cfg.head_dim
        bias = cfg.attention_bias
        self.q_proj = nn.Linear(d, q_size, bias=bias, dtype=dtype, device=device)
        self.k_proj = nn.Linear(d, kv_size, bias=bias, dtype=dtype, device=device)
        self.v_proj = nn.Linear(d, kv_size, bias=bias, dtype=dtype, device=device)
        self.o_proj = nn.Linear(q_size, d, bias=bias, dtype=dtype, device=device)
        self.q_norm = RMSNorm(cfg.head_dim, cfg.rms_norm_eps, dtype, device)
        self.k_norm = RMSNorm(cfg.head_dim, cfg.rms_norm_eps, dtype, device)

    def key_value(self, x: torch.Tensor, positions: torch.Tensor, cos_sin: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys (k_norm, then RoPE) and values of `x [T, d]` at `positions [T]` -> `[T, H_kv, D]` each."""
        k = self.k_norm(self.k_proj(x).reshape(-1, self.num_kv_heads, self.head_dim))
        v = self.v_proj(x).reshape(-1, self.num_kv_heads, self.head_dim)
        _, k = ops.rotary_embedding(positions, k, k, cos_sin, True)   # no queries: k twice
        return k, v

    def forward(self, x: torch.Tensor, positions: torch.Tensor, cos_sin: torch.Tensor,
                context_k: torch.Tensor, context_v: torch.Tensor, context_valid: torch.Tensor
                ) -> torch.Tensor:
        """Block attention.

        Args:
            x: `[R, G, d]` normed block hidden states.
            positions: `[R, G]` int64 absolute positions.
            cos_sin: the RoPE table `[P, D]`.
            context_k, context_v: `[R, N, H_kv, D]` (padded per row).
            context_valid: `[R, N]` bool, which context entries a row's queries may see.

        Returns:
            `[R, G, d]`.
        """
        rows, width = x.shape[:2]
        flat, flat_pos = x.reshape(rows * width, -1), positions.reshape(-1)
        q = self.q_norm(self.q_proj(flat).reshape(-1, self.num_heads, self.head_dim))
        k = self.k_norm(self.k_proj(flat).reshape(-1, self.num_kv_heads, self.head_dim))
        v = self.v_proj(flat).reshape(-1, self.num_kv_heads, self.head_dim)
        q, k = ops.rotary_embedding(flat_pos, q, k, cos_sin, True)
        q = q.reshape(rows, width, self.num_heads, self.head_dim)
        keys = torch.cat([context_k, k.reshape(rows, width, self.num_kv_heads, -1)], dim=1)
        values = torch.cat([context_v, v.reshape(rows, width, self.num_kv_heads, -1)], dim=1)
        block_valid = torch.ones(rows, width, dtype=torch.bool, device=x.device)
        visible = torch.cat([context_valid, block_valid], dim=1)              # [R, N + G]
        out = attend(q, keys, values, visible, self.head_dim ** -0.5)
        return self.o_proj(out.reshape(rows, width, self.num_heads * self.head_dim))


def attend(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, visible: torch.Tensor,
           scale: float) -> torch.Tensor:
    """Softmax attention with a per-row key mask, in float32 (GQA by repeating K/V heads).

    Args:
        q: `[R, G, H, D]`.
        keys, values: `[R, S, H_kv, D]`.
        visible: `[R, S]` bool; every row must see at least one key.
        scale: logit scale (1/sqrt(D)).

    Returns:
        `[R, G, H, D]` in `q.dtype`.
    """
    groups = q.shape[2] // keys.shape[2]
    keys = keys.repeat_interleave(groups, dim=2).float()
    # Hidden entries get weight exactly 0; zeroing their values too keeps a non-finite hidden
    # entry (stale buffer rows of another request, see `draft_graph`) out of 0 * inf = NaN.
    values = values.repeat_interleave(groups, dim=2).float().masked_fill(~visible[:, :, None, None], 0.0)
    scores = torch.einsum("rghd,rshd->rhgs", q.float(), keys) * scale
    scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
    return torch.einsum("rhgs,rshd->rghd", scores.softmax(dim=-1), values).to(q.dtype)


class DraftMLP(nn.Module):
    """SwiGLU feed-forward: `down(silu(gate(x)) * up(x))`."""

    def __init__(self, cfg: DSparkConfig, dtype: torch.dtype | None,
                 device: torch.device | str | None) -> None:
        super().__init__()
        d, inter = cfg.hidden_size, cfg.intermediate_size
        self.gate_proj = nn.Linear(d, inter, bias=False, dtype=dtype, device=device)
        self.up_proj = nn.Linear(d, inter, bias=False, dtype=dtype, device=device)
        self.down_proj = nn.Linear(inter, d, bias=False, dtype=dtype, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """`[T, d]` -> `[T, d]`."""
        return self.down_proj(ops.silu_and_mul(torch.cat([self.gate_proj(x), self.up_proj(x)], dim=-1)))


class DraftLayer(nn.Module):
    """One pre-norm Qwen3-style block whose attention also reads injected context K/V."""

    def __init__(self, cfg: DSparkConfig, dtype: torch.dtype | None,
                 device: torch.device | str | None) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype, device)
        self.self_attn = DraftAttention(cfg, dtype, device)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype, device)
        self.mlp = DraftMLP(cfg, dtype, device)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, cos_sin: torch.Tensor,
                context_k: torch.Tensor, context_v: torch.Tensor, context_valid: torch.Tensor
                ) -> torch.Tensor:
        """`[R, G, d]` -> `[R, G, d]` (arguments as for `DraftAttention.forward`)."""
        x = x + self.self_attn(self.input_layernorm(x), positions, cos_sin, context_k, context_v,
                               context_valid)
        rows, width, d = x.shape
        return x + self.mlp(self.post_attention_layernorm(x).reshape(-1, d)).reshape(rows, width, d)


class DSparkDrafter(nn.Module):
    """The DSpark drafter; parameter names are DeepSpec's checkpoint keys (see `checkpoint`).

    Args:
        cfg: the architecture.
        dtype: parameter and activation dtype.
        device: parameter device.

    Attributes:
        markov_head: a `MarkovHead` or None (`markov_rank` 0).
        confidence_head: a `ConfidenceHead` or None (`enable_confidence_head` false).
        cos_sin: `[max_position_embeddings, head_dim]` float32 RoPE table (not a checkpoint key).
    """

    def __init__(self, cfg: DSparkConfig, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None) -> None:
        super().__init__()
        self.config = cfg
        d = cfg.hidden_size
        self.embed_tokens = nn.Embedding(cfg.vocab_size, d, dtype=dtype, device=device)
        self.layers = nn.ModuleList(DraftLayer(cfg, dtype, device) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(d, cfg.rms_norm_eps, dtype, device)
        self.fc = nn.Linear(cfg.feature_size, d, bias=False, dtype=dtype, device=device)
        self.hidden_norm = RMSNorm(d, cfg.rms_norm_eps, dtype, device)
        self.lm_head = nn.Linear(d, cfg.vocab_size, bias=False, dtype=dtype, device=device)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        self.markov_head: MarkovHead | None = build_markov_head(cfg, dtype, device)
        self.confidence_head: ConfidenceHead | None = None
        if cfg.enable_confidence_head:
            rank = cfg.markov_rank if cfg.confidence_head_with_markov else 0
            self.confidence_head = ConfidenceHead(d, rank, dtype, device)
        cos_sin = ops.build_rope_cache(cfg.head_dim, cfg.max_position_embeddings, cfg.rope_theta,
                                       cfg.rope_scaling, torch.float32, device)
        self.register_buffer("cos_sin", cos_sin, persistent=False)

    @property
    def dtype(self) -> torch.dtype:
        """The parameter dtype."""
        return self.fc.weight.dtype

    def context_kv(self, features: torch.Tensor, positions: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """Every layer's context keys and values for target features (what the cache stores).

        Args:
            features: `[n, m*d]` concatenated target features of n committed positions.
            positions: `[n]` int64 absolute positions, each < `max_position_embeddings`.

        Returns:
            `(k, v)`, each `[L, n, H_kv, D]` in the parameter dtype (L draft layers).
        """
        context = self.hidden_norm(self.fc(features.to(self.dtype)))
        pairs = [layer.self_attn.key_value(context, positions, self.cos_sin) for layer in self.layers]
        return torch.stack([k for k, _ in pairs]), torch.stack([v for _, v in pairs])

    def forward(self, block_tokens: torch.Tensor, positions: torch.Tensor, context_k: torch.Tensor,
                context_v: torch.Tensor, context_valid: torch.Tensor) -> torch.Tensor:
        """The parallel backbone over R blocks.

        Args:
            block_tokens: `[R, G]` int64, `[x0, MASK, ..., MASK]` per row.
            positions: `[R, G]` int64 absolute positions (`s .. s+G-1`).
            context_k, context_v: `[L, R, N, H_kv, D]` from `context_kv`, padded to N per row.
            context_valid: `[R, N]` bool: which context entries row r sees (its positions
                before the anchor).

        Returns:
            `[R, G, d]` final-normed hidden states h_1..h_G.
        """
        x = self.embed_tokens(block_tokens)
        for layer, k, v in zip(self.layers, context_k, context_v, strict=True):
            x = layer(x, positions, self.cos_sin, k, v, context_valid)
        return self.norm(x)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Base logits U_k = lm_head(h_k): `[..., d]` -> `[..., V]` float32."""
        return self.lm_head(hidden).float()

    def confidence_logits(self, hidden: torch.Tensor, prev_tokens: torch.Tensor) -> torch.Tensor | None:
        """Raw confidence logits from h_k and x_{k-1}: `[..., d]`, `[...]` -> `[...]` float32.

        Returns None when the drafter has no confidence head.
        """
        if self.confidence_head is None:
            return None
        prev = None
        if self.confidence_head.markov_rank > 0:
            prev = self.markov_head.prev_embedding(prev_tokens)
        return self.confidence_head(hidden, prev)

    def corrected_logits(self, hidden: torch.Tensor, prev_tokens: torch.Tensor) -> torch.Tensor:
        """Teacher-forced Markov-corrected logits `U_k + B_k` (training and scoring).

        Args:
            hidden: `[R, G, d]` from `forward`.
            prev_tokens: `[R, G]` int64; column k is x_k, the token before position k + 1.

        Returns:
            `[R, G, V]` float32.
        """
        logits = self.compute_logits(hidden)
        if self.markov_head is None:
            return logits
        return logits + self.markov_head.block_bias(prev_tokens, hidden)
