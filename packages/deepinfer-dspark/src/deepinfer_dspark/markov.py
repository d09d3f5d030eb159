# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DSpark's sequential heads: the logit bias B_k that makes the block draft autoregressive.

The draft distribution of position k (1-based) is the exact causal factorisation
`q_k(v | x_0, x_<k) = softmax_v(U_k(v) + B_k(v))`, where `U_k` are the parallel backbone's
base logits and `B_k` depends on the previous token x_{k-1} (x_0 = the anchor). Variants
(Cheng et al. 2026, "DSpark", section 3.2, and the DeepSpec reference code):

  vanilla  B_k = W2 W1[x_{k-1}]                         (the "Markov head"; low rank r)
  gated    B_k = W2 (sigmoid(W_g [h_k; W1[x_{k-1}]] + b_g) * W1[x_{k-1}])
  rnn      z_k = [s_{k-1}; W1[x_{k-1}]; h_k],  [g; c; o] = W_j z_k + b_j  (split in 3 x r),
           s_k = sigmoid(g) * s_{k-1} + (1 - sigmoid(g)) * tanh(c),  s_0 = 0,
           B_k = W2 tanh(o)                              (the paper's GRU-like "RNN head")

`W1` is an embedding table `[V, r]` (`markov_w1`), `W2` a bias-free linear map r -> V
(`markov_w2`), `W_g` is `gate_proj` `[r, d + r]`, `W_j` is `joint_proj` `[3r, 2r + d]`;
h_k is the backbone's final-normed hidden state at position k.

Every head exposes the same step interface (state `[B, r]`; vanilla and gated pass it
through unchanged), so one sampling loop serves all three.
"""

from __future__ import annotations

import torch
from torch import nn

from deepinfer_dspark.config import DSparkConfig


class MarkovHead(nn.Module):
    """The vanilla head, and the W1/W2 tables every variant shares.

    Args:
        vocab_size: V.
        rank: r > 0.
        hidden_size: d (unused by the vanilla head; kept for a uniform constructor).
        dtype, device: parameter placement.
    """

    head_type = "vanilla"

    def __init__(self, vocab_size: int, rank: int, hidden_size: int,
                 dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> None:
        super().__init__()
        if rank <= 0:
            raise ValueError(f"markov_rank: must be > 0 for a Markov head, got {rank}")
        self.rank = rank
        self.markov_w1 = nn.Embedding(vocab_size, rank, dtype=dtype, device=device)
        self.markov_w2 = nn.Linear(rank, vocab_size, bias=False, dtype=dtype, device=device)

    def prev_embedding(self, prev_tokens: torch.Tensor) -> torch.Tensor:
        """`W1[x_{k-1}]`: int64 `[...]` -> `[..., r]` in the parameter dtype."""
        return self.markov_w1(prev_tokens)

    def initial_state(self, batch: int, like: torch.Tensor) -> torch.Tensor:
        """The state before position 1: zeros `[batch, r]` with the dtype/device of `like`."""
        return torch.zeros(batch, self.rank, dtype=like.dtype, device=like.device)

    def step(self, prev_tokens: torch.Tensor, hidden: torch.Tensor, state: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """Bias of one position.

        Args:
            prev_tokens: `[B]` int64, x_{k-1}.
            hidden: `[B, d]`, h_k.
            state: `[B, r]`, s_{k-1}.

        Returns:
            `(bias [B, V] float32, new state [B, r])`.
        """
        return self.markov_w2(self.prev_embedding(prev_tokens)).float(), state

    def block_bias(self, prev_tokens: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """Teacher-forced biases of a whole block (training and scoring; differentiable).

        Args:
            prev_tokens: `[B, G]` int64; column k holds x_{k} for position k + 1 (column 0 is
                the anchor).
            hidden: `[B, G, d]`, the backbone's final-normed hidden states.

        Returns:
            `[B, G, V]` float32 biases `B_1..B_G`.
        """
        state = self.initial_state(prev_tokens.shape[0], hidden)
        biases = []
        for k in range(prev_tokens.shape[1]):
            bias, state = self.step(prev_tokens[:, k], hidden[:, k], state)
            biases.append(bias)
        return torch.stack(biases, dim=1)


class GatedMarkovHead(MarkovHead):
    """`B_k = W2 (sigmoid(gate_proj([h_k; W1[x_{k-1}]])) * W1[x_{k-1}])` (see module doc)."""

    head_type = "gated"

    def __init__(self, vocab_size: int, rank: int, hidden_size: int,
                 dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> None:
        super().__init__(vocab_size, rank, hidden_size, dtype, device)
        self.gate_proj = nn.Linear(hidden_size + rank, rank, dtype=dtype, device=device)

    def step(self, prev_tokens: torch.Tensor, hidden: torch.Tensor, state: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor]:
        prev = self.prev_embedding(prev_tokens)
        gate = torch.sigmoid(self.gate_proj(torch.cat([hidden.to(prev.dtype), prev], dim=-1)))
        return self.markov_w2(gate * prev).float(), state


class RNNMarkovHead(MarkovHead):
    """The GRU-like recurrent head (see module doc); the state carries the whole prefix."""

    head_type = "rnn"

    def __init__(self, vocab_size: int, rank: int, hidden_size: int,
                 dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> None:
        super().__init__(vocab_size, rank, hidden_size, dtype, device)
        self.joint_proj = nn.Linear(2 * rank + hidden_size, 3 * rank, dtype=dtype, device=device)

    def step(self, prev_tokens: torch.Tensor, hidden: torch.Tensor, state: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor]:
        prev = self.prev_embedding(prev_tokens)
        z = torch.cat([state.to(prev.dtype), prev, hidden.to(prev.dtype)], dim=-1)
        gate, candidate, output = self.joint_proj(z).chunk(3, dim=-1)
        gate = torch.sigmoid(gate)
        new_state = gate * state + (1 - gate) * torch.tanh(candidate)
        return self.markov_w2(torch.tanh(output)).float(), new_state


HEADS: dict[str, type[MarkovHead]] = {
    "vanilla": MarkovHead,
    "gated": GatedMarkovHead,
    "rnn": RNNMarkovHead,
}


def build_markov_head(cfg: DSparkConfig, dtype: torch.dtype | None = None,
                      device: torch.device | str | None = None) -> MarkovHead | None:
    """The head `cfg.markov_head_type` names, or None when `cfg.markov_rank` is 0.

    Raises:
        ValueError: unknown `markov_head_type` (named).
    """
    if cfg.markov_rank == 0:
        return None
    if cfg.markov_head_type not in HEADS:
        raise ValueError(f"markov_head_type: {cfg.markov_head_type!r} not in {tuple(HEADS)}")
    head_cls = HEADS[cfg.markov_head_type]
    return head_cls(cfg.vocab_size, cfg.markov_rank, cfg.hidden_size, dtype, device)
