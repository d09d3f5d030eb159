# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The drafter to train: its DeepSpec config, its initialisation from the target, and saving.

A DSpark drafter (Cheng et al. 2026, "DSpark", section 3) reuses the target's width, heads, head
size, RoPE and vocabulary, with fewer Qwen3-style layers; its embedding and LM head are frozen
copies of the target's. The checkpoint is a DeepSpec folder (`config.json` with the DeepSpec keys,
`model.safetensors` with DeepSpec key names, see `deepinfer_dspark.checkpoint`), so
`deepinfer_dspark.load_checkpoint` and the engine's `dspark` proposer load it as they load
DeepSpec's releases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.drafter import DSparkDrafter

# Target config keys the drafter inherits unchanged (when the target states them).
INHERITED_KEYS = ("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads",
                  "num_key_value_heads", "rms_norm_eps", "max_position_embeddings",
                  "rope_theta", "rope_scaling", "rope_parameters", "bos_token_id", "eos_token_id")


def drafter_config(target_config: dict[str, Any], *, num_layers: int, block_size: int,
                   target_layer_ids: tuple[int, ...], mask_token_id: int, markov_rank: int = 256,
                   markov_head_type: str = "vanilla", num_anchors: int = 32) -> dict[str, Any]:
    """The DeepSpec `config.json` dict of a drafter for `target_config` (an HF config dict).

    Args:
        target_config: the target's HF config.
        num_layers: draft decoder layers.
        block_size: G, positions of one draft block (at most G drafts per round).
        target_layer_ids: the target layers feeding the drafter.
        mask_token_id: the token filling the block after the anchor.
        markov_rank: r of the Markov head (0 disables it).
        markov_head_type: "vanilla" | "gated" | "rnn".
        num_anchors: anchors per sequence used in training (recorded, as DeepSpec does).

    Returns:
        The config dict (validated by `DSparkConfig.from_dict`).

    Raises:
        ValueError: an invalid value (names the key).
    """
    config = {key: target_config[key] for key in INHERITED_KEYS if target_config.get(key) is not None}
    heads = int(target_config["num_attention_heads"])
    config.update({
        "architectures": ["Qwen3DSparkModel"],
        "model_type": "qwen3",
        "head_dim": int(target_config.get("head_dim") or target_config["hidden_size"] // heads),
        "hidden_act": "silu",
        "attention_bias": False,
        "tie_word_embeddings": False,
        "num_hidden_layers": num_layers,
        "layer_types": ["full_attention"] * num_layers,
        "num_target_layers": int(target_config["num_hidden_layers"]),
        "block_size": block_size,
        "mask_token_id": mask_token_id,
        "target_layer_ids": list(target_layer_ids),
        "num_anchors": num_anchors,
        "enable_confidence_head": True,
        "confidence_head_with_markov": markov_rank > 0,
        "markov_rank": markov_rank,
        "markov_head_type": markov_head_type,
        "torch_dtype": "float32",
    })
    DSparkConfig.from_dict(config)
    return config


def init_drafter(config: dict[str, Any], embed: torch.Tensor, lm_head: torch.Tensor, *,
                 std: float = 0.02, seed: int = 0, device: torch.device | str | None = None
                 ) -> DSparkDrafter:
    """A float32 drafter with random weights and the target's embedding and LM head, frozen.

    Linear and embedding weights are drawn from N(0, std^2) (the HF `initializer_range`
    convention), biases are 0, RMSNorm scales 1.

    Args:
        config: a DeepSpec config dict (see `drafter_config`).
        embed, lm_head: the target's `[V, d]` input embedding and LM head.
        std: initialisation scale.
        seed: seeds a private generator (the global RNG is not touched).
        device: where the drafter lives.

    Raises:
        ValueError: a bad config (names the key) or tensors of the wrong shape (names them).
    """
    drafter = DSparkDrafter(DSparkConfig.from_dict(config), torch.float32, device)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in drafter.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.copy_(torch.randn(module.weight.shape, generator=generator) * std)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.zero_()
        for name, source, module in (("embed", embed, drafter.embed_tokens), ("lm_head", lm_head, drafter.lm_head)):
            if tuple(source.shape) != tuple(module.weight.shape):
                raise ValueError(f"{name}: shape {tuple(source.shape)}, expected {tuple(module.weight.shape)}")
            module.weight.copy_(source.float())
            module.weight.requires_grad_(False)
    return drafter


def save_checkpoint(drafter: DSparkDrafter, config: dict[str, Any], folder: str | Path) -> Path:
    """Writes `config.json` and `model.safetensors` (float32, DeepSpec key names) into `folder`.

    Returns:
        The folder path.
    """
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {name: tensor.detach().to("cpu", torch.float32).clone().contiguous()
             for name, tensor in drafter.state_dict().items()}
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return folder
