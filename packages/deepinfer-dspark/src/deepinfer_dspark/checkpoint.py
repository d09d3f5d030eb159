# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Loading DeepSpec-format DSpark checkpoints into a `DSparkDrafter`.

A DeepSpec checkpoint is the HF `save_pretrained` output of `Qwen3DSparkModel`: `config.json`
(see `DSparkConfig`) and safetensors with these keys (no `model.` prefix; torch.compile's
`_orig_mod.` infix is stripped wherever it appears); d = hidden, r = markov rank, m = number of
target layers, I = MLP width, H / H_kv / D = heads / KV heads / head dim:

    embed_tokens.weight [V, d], lm_head.weight [V, d]          copies of the target's tensors
    layers.{i}.input_layernorm.weight, .post_attention_layernorm.weight [d]
    layers.{i}.self_attn.q_proj.weight [H*D, d]; k_proj/v_proj.weight [H_kv*D, d]
    layers.{i}.self_attn.o_proj.weight [d, H*D]; q_norm/k_norm.weight [D]
    layers.{i}.mlp.gate_proj/up_proj.weight [I, d]; down_proj.weight [d, I]
    norm.weight, hidden_norm.weight [d]; fc.weight [d, m*d]
    markov_head.markov_w1.weight [V, r]; markov_head.markov_w2.weight [V, r]
    markov_head.gate_proj.{weight [r, d+r], bias [r]}           gated head only
    markov_head.joint_proj.{weight [3r, 2r+d], bias [3r]}       rnn head only
    confidence_head.proj.weight [1, d+r] (or [1, d]), .bias [1] with the confidence head

The embedding and LM head are frozen copies of the target's. When the caller passes the
target's tensors, the drafter aliases them (no second copy in memory) if the checkpoint omits
them or stores identical values, as vLLM does; differing values keep the checkpoint's copy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.drafter import DSparkDrafter

SHARED_KEYS = ("embed_tokens.weight", "lm_head.weight")
COMPILE_INFIX = "_orig_mod."


def normalize_keys(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Strips torch.compile's `_orig_mod.` from every key.

    Raises:
        ValueError: two keys collapse to one name (names it).
    """
    out: dict[str, torch.Tensor] = {}
    for key, tensor in state.items():
        name = key.replace(COMPILE_INFIX, "")
        if name in out:
            raise ValueError(f"state_dict: key {key!r} duplicates {name!r} after stripping "
                             f"{COMPILE_INFIX!r}")
        out[name] = tensor
    return out


def expected_shapes(drafter: DSparkDrafter) -> dict[str, tuple[int, ...]]:
    """Checkpoint key -> shape for every tensor `drafter` loads (tied LM head excluded)."""
    shapes = {name: tuple(p.shape) for name, p in drafter.named_parameters(remove_duplicate=False)}
    if drafter.config.tie_word_embeddings:
        shapes.pop("lm_head.weight")
    return shapes


def load_state_dict(drafter: DSparkDrafter, state: Mapping[str, torch.Tensor],
                    target_embed: torch.Tensor | None = None,
                    target_lm_head: torch.Tensor | None = None) -> None:
    """Loads DeepSpec-named tensors into `drafter` (in place, cast to its dtype).

    Args:
        drafter: the module to fill.
        state: checkpoint tensors by DeepSpec name (`_orig_mod.` allowed).
        target_embed: the target's input embedding `[V, d]`, or None.
        target_lm_head: the target's LM head `[V, d]`, or None.

    Raises:
        ValueError: unexpected keys, missing keys (the embedding / LM head are missing only
            when neither the checkpoint nor the caller provides them) or a shape mismatch; the
            message names the keys.
    """
    state = normalize_keys(state)
    expected = expected_shapes(drafter)
    tied = drafter.config.tie_word_embeddings
    targets = {"embed_tokens.weight": target_embed, "lm_head.weight": None if tied else target_lm_head}
    ignored = {"lm_head.weight"} if tied else set()   # a tied head may still be saved
    unexpected = sorted(set(state) - set(expected) - ignored)
    if unexpected:
        raise ValueError(f"state_dict: unexpected keys {unexpected}")
    missing = sorted(k for k in expected if k not in state and targets.get(k) is None)
    if missing:
        raise ValueError(f"state_dict: missing keys {missing}")
    for key, tensor in list(state.items()) + [(k, t) for k, t in targets.items() if t is not None]:
        if key in expected and tuple(tensor.shape) != expected[key]:
            raise ValueError(f"state_dict: {key!r} has shape {tuple(tensor.shape)}, expected "
                             f"{expected[key]}")
    params = dict(drafter.named_parameters(remove_duplicate=False))
    with torch.no_grad():
        for key in expected:
            if key in SHARED_KEYS and targets[key] is not None:
                _share(drafter, key, state.get(key), targets[key])
            else:
                params[key].copy_(state[key])
    if tied:
        drafter.lm_head.weight = drafter.embed_tokens.weight   # re-tie after aliasing


def _share(drafter: DSparkDrafter, key: str, stored: torch.Tensor | None, target: torch.Tensor) -> None:
    """Aliases the target's tensor for `key` when allowed, else copies the stored values."""
    module = drafter.get_submodule(key.rpartition(".")[0])
    same_place = target.dtype == drafter.dtype and target.device == module.weight.device
    if stored is not None and not torch.equal(stored.to(device=target.device, dtype=target.dtype), target):
        module.weight.copy_(stored)                        # the draft trained its own copy
    elif same_place:
        module.weight = nn.Parameter(target.detach(), requires_grad=False)
    else:
        module.weight.copy_(target)                        # cannot alias across dtype/device
    module.weight.requires_grad_(False)


def read_checkpoint(path: str | Path) -> tuple[dict, dict[str, torch.Tensor]]:
    """Reads `config.json` and every `*.safetensors` file of a checkpoint folder (on CPU).

    Raises:
        ValueError: the folder, its config or its safetensors files are missing, or two
            files hold the same key (names the path or key).
    """
    from safetensors.torch import load_file

    folder = Path(path)
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise ValueError(f"path: {folder} has no config.json")
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ValueError(f"path: {folder} has no *.safetensors files")
    state: dict[str, torch.Tensor] = {}
    for file in files:
        for key, tensor in load_file(str(file)).items():
            if key in state:
                raise ValueError(f"path: key {key!r} appears in more than one file ({file.name})")
            state[key] = tensor
    return json.loads(config_path.read_text()), state


def load_checkpoint(path: str | Path, dtype: torch.dtype = torch.float32,
                    device: torch.device | str | None = None,
                    target_embed: torch.Tensor | None = None,
                    target_lm_head: torch.Tensor | None = None) -> DSparkDrafter:
    """Builds a `DSparkDrafter` from a DeepSpec checkpoint folder.

    Args:
        path: folder with `config.json` and `*.safetensors`.
        dtype, device: where the drafter lives.
        target_embed, target_lm_head: the target's tensors to alias (see module doc).

    Raises:
        ValueError: invalid config (names the key) or tensors (see `load_state_dict`).
    """
    config, state = read_checkpoint(path)
    drafter = DSparkDrafter(DSparkConfig.from_dict(config), dtype, device)
    load_state_dict(drafter, state, target_embed, target_lm_head)
    return drafter.eval()
