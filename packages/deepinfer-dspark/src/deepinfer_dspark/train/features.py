# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""TargetModel: the target's features and logits for training, computed with HF transformers.

DSpark feeds the drafter the outputs of m target decoder layers (`target_layer_ids`; id i is HF
`hidden_states[i + 1]`, -1 the embedding output) and trains it against the target's next-token
distribution at every position (Cheng et al. 2026, "DSpark", section 3; DeepSpec
`scripts/data/prepare_target_cache.py` stores the same two things). The engine computes the same
features during serving (the residual stream after each listed layer).

A GGUF file is loaded by transformers' GGUF reader (dequantized weights, as the engine loads them);
an HF folder by `from_pretrained`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch


def default_target_layer_ids(num_layers: int, count: int = 5) -> tuple[int, ...]:
    """Evenly spread feature layers, DeepSpec's pattern: from layer 1 to layer `num_layers - 3`.

    For 36 layers this gives DeepSpec's Qwen3-4B/8B choice (1, 9, 17, 25, 33) and for 40 layers
    its Qwen3-14B choice (1, 10, 19, 28, 37). Small models get fewer distinct layers; the last
    layer is never used (HF returns it final-normed).

    Raises:
        ValueError: `num_layers` < 2 or `count` < 1 (names the field).
    """
    if num_layers < 2:
        raise ValueError(f"num_layers: need >= 2 target layers, got {num_layers}")
    if count < 1:
        raise ValueError(f"count: must be >= 1, got {count}")
    low = 1 if num_layers >= 3 else 0
    high = max(low, num_layers - 3) if num_layers >= 5 else num_layers - 2
    if count == 1:
        return (high,)
    return tuple(sorted({round(low + i * (high - low) / (count - 1)) for i in range(count)}))


def check_target_layer_ids(ids: tuple[int, ...], num_layers: int) -> tuple[int, ...]:
    """Validates feature layers: strictly increasing, each in [-1, num_layers - 2].

    Raises:
        ValueError: an invalid list (names `target_layer_ids`).
    """
    ids = tuple(ids)
    if not ids or any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
        raise ValueError(f"target_layer_ids: need a non-empty list of ints, got {list(ids)}")
    if any(b <= a for a, b in zip(ids, ids[1:])):
        raise ValueError(f"target_layer_ids: must be strictly increasing, got {list(ids)}")
    if ids[0] < -1 or ids[-1] > num_layers - 2:
        raise ValueError(f"target_layer_ids: each must be in [-1, {num_layers - 2}] (the last of "
                         f"{num_layers} layers is final-normed by HF), got {list(ids)}")
    return ids


def load_hf_target(path: str | Path, dtype: torch.dtype = torch.float32,
                   device: torch.device | str = "cpu") -> torch.nn.Module:
    """Loads a causal LM from an HF folder or a `.gguf` file, in eval mode.

    Raises:
        ValueError: `path` is neither a folder nor a `.gguf` file (names `target`).
    """
    import transformers

    path = Path(path)
    if path.is_file() and path.suffix == ".gguf":
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                                  dtype=dtype)
    elif path.is_dir():
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
    else:
        raise ValueError(f"target: {path} is neither an HF checkpoint folder nor a .gguf file")
    return model.to(device).eval()


@dataclass
class TargetOutput:
    """The target's view of a right-padded batch.

    Attributes:
        features: `[B, L, m*d]` the outputs of the `target_layer_ids` layers, concatenated in
            that order (model dtype).
        logits: `[B, L, V]` next-token logits at every position (model dtype).
    """

    features: torch.Tensor
    logits: torch.Tensor


@dataclass
class TargetHidden:
    """The target's view of a right-padded batch without its full logits (`TargetModel.hidden`).

    Attributes:
        features: `[B, L, m*d]` as `TargetOutput.features`.
        last_hidden: `[B, L, d]` the last layer's output after the final norm (what the LM head reads).
        last_logits: `[B, 1, V]` the target's own logits at the last position (a consistency check).
    """

    features: torch.Tensor
    last_hidden: torch.Tensor
    last_logits: torch.Tensor


class TargetModel:
    """A frozen HF causal LM that returns DSpark training features.

    Args:
        model: an HF `*ForCausalLM` (see `load_hf_target`).
        target_layer_ids: the feature layers (validated against the model's depth).

    Attributes:
        config: the model's HF config dict (without quantization settings).
        num_layers, hidden_size, vocab_size: from the config.
        device, dtype: where the model runs.

    Raises:
        ValueError: bad `target_layer_ids` (named).
    """

    def __init__(self, model: torch.nn.Module, target_layer_ids: tuple[int, ...]) -> None:
        self.model = model.eval().requires_grad_(False)
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        self.config = config
        self.num_layers = int(model.config.num_hidden_layers)
        self.hidden_size = int(model.config.hidden_size)
        self.vocab_size = int(model.config.vocab_size)
        self.target_layer_ids = check_target_layer_ids(target_layer_ids, self.num_layers)
        first = next(model.parameters())
        self.device, self.dtype = first.device, first.dtype

    @property
    def embed_weight(self) -> torch.Tensor:
        """The input embedding `[V, d]`."""
        return self.model.get_input_embeddings().weight

    @property
    def lm_head_weight(self) -> torch.Tensor:
        """The LM head `[V, d]` (the embedding itself when tied)."""
        return self.model.get_output_embeddings().weight

    @torch.no_grad()
    def __call__(self, token_ids: torch.Tensor) -> TargetOutput:
        """Features and logits of a right-padded batch.

        Right padding needs no attention mask: attention is causal, so a position never sees the
        padding after it.

        Args:
            token_ids: `[B, L]` int64.

        Returns:
            A `TargetOutput` on the model's device.

        Raises:
            ValueError: `token_ids` is not a 2-D int64 tensor of ids < vocab_size.
        """
        self._check_ids(token_ids)
        out = self.model(input_ids=token_ids.to(self.device), output_hidden_states=True, use_cache=False)
        features = torch.cat([out.hidden_states[i + 1] for i in self.target_layer_ids], dim=-1)
        return TargetOutput(features=features, logits=out.logits)

    @torch.no_grad()
    def hidden(self, token_ids: torch.Tensor) -> TargetHidden:
        """Features and last hidden states of a right-padded batch, the logits at its last
        position only (HF `logits_to_keep=1`): for `TargetCache`, which applies the LM head
        (`lm_head`) where the loss reads it.

        Raises:
            ValueError: as `__call__`.
        """
        self._check_ids(token_ids)
        out = self.model(input_ids=token_ids.to(self.device), output_hidden_states=True, use_cache=False,
                         logits_to_keep=1)
        features = torch.cat([out.hidden_states[i + 1] for i in self.target_layer_ids], dim=-1)
        return TargetHidden(features=features, last_hidden=out.hidden_states[-1], last_logits=out.logits)

    @torch.no_grad()
    def lm_head(self, hidden: torch.Tensor) -> torch.Tensor:
        """The target's LM head on last hidden states `[..., d]`: logits `[..., V]` (model dtype)."""
        return self.model.get_output_embeddings()(hidden)

    def _check_ids(self, token_ids: torch.Tensor) -> None:
        if token_ids.dim() != 2 or token_ids.dtype != torch.int64:
            raise ValueError(f"token_ids: need a [B, L] int64 tensor, got {token_ids.dtype} "
                             f"{tuple(token_ids.shape)}")
        if token_ids.numel() and not 0 <= int(token_ids.min()) <= int(token_ids.max()) < self.vocab_size:
            raise ValueError(f"token_ids: ids must be in [0, {self.vocab_size})")
