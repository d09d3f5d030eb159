# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DSparkConfig: the drafter architecture, parsed from a DeepSpec `config.json` dict.

A DeepSpec DSpark checkpoint (`Qwen3DSparkModel`, Cheng et al. 2026, "DSpark:
Confidence-Scheduled Speculative Decoding with Semi-Autoregressive Generation") stores the
target's Qwen3 config (hidden size, heads, head dim, RoPE, vocabulary, ...) plus the drafter
keys `num_hidden_layers`, `block_size`, `mask_token_id`, `target_layer_ids`, `markov_rank`,
`markov_head_type`, `enable_confidence_head` and `confidence_head_with_markov`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MARKOV_HEAD_TYPES = ("vanilla", "gated", "rnn")
ROPE_TYPES = ("linear", "llama3", "yarn")


@dataclass(frozen=True)
class DSparkConfig:
    """Architecture of a DSpark drafter (Qwen3-style layers, Markov head, confidence head).

    Attributes:
        vocab_size: V, shared with the target.
        hidden_size: d, the drafter width (equal to the target's hidden size).
        intermediate_size: I, SwiGLU width.
        num_hidden_layers: number of draft decoder layers.
        num_attention_heads: H, query heads.
        num_key_value_heads: H_kv, key/value heads (H % H_kv == 0).
        head_dim: size of one head (default d / H).
        rms_norm_eps: epsilon of every RMSNorm.
        rope_theta: RoPE base.
        rope_scaling: None for plain RoPE, else `{"rope_type": ..., **params}` as accepted by
            `deepinfer_kernels.ops.build_rope_cache`.
        max_position_embeddings: positions the RoPE table covers.
        attention_bias: q/k/v/o projections carry a bias (Qwen3: False).
        block_size: positions of one draft block (anchor + block_size - 1 masks); the drafter
            proposes at most `block_size` tokens per round.
        mask_token_id: token id filling the block after the anchor.
        target_layer_ids: m target decoder layers whose outputs feed the drafter, strictly
            increasing; id i is HF `hidden_states[i + 1]`, -1 the embedding output.
        num_target_layers: number of target layers when the config states it, else None.
        markov_rank: r; 0 disables the Markov head (pure DFlash-style drafting).
        markov_head_type: "vanilla" | "gated" | "rnn"; "none" when `markov_rank` is 0.
        enable_confidence_head: whether `confidence_head.proj` exists.
        confidence_head_with_markov: the confidence head also reads `W1[x_{k-1}]`.
        tie_word_embeddings: the LM head reuses the embedding (DeepSpec drafts: False).
    """

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    rope_scaling: dict[str, Any] | None
    max_position_embeddings: int
    attention_bias: bool
    block_size: int
    mask_token_id: int
    target_layer_ids: tuple[int, ...]
    num_target_layers: int | None
    markov_rank: int
    markov_head_type: str
    enable_confidence_head: bool
    confidence_head_with_markov: bool
    tie_word_embeddings: bool

    @property
    def num_target_features(self) -> int:
        """m, the number of target layers feeding the drafter."""
        return len(self.target_layer_ids)

    @property
    def feature_size(self) -> int:
        """m * d, the width of one position's concatenated target features."""
        return self.num_target_features * self.hidden_size

    @classmethod
    def from_dict(cls, config: dict[str, Any]) -> DSparkConfig:
        """Parses and validates a DeepSpec DSpark `config.json` dict.

        Accepts transformers v4 (`rope_theta`, `rope_scaling`) and v5 (`rope_parameters`)
        RoPE keys, and vLLM's `dspark_target_layer_ids` spelling of `target_layer_ids`.

        Raises:
            ValueError: a required key is missing or a value is invalid; the message names
                the key.
        """
        if not isinstance(config, dict):
            raise ValueError(f"config: expected a dict, got {type(config).__name__}")
        hidden = _int(config, "hidden_size", minimum=1)
        heads = _int(config, "num_attention_heads", minimum=1)
        kv_heads = _optional_int(config, "num_key_value_heads", heads, minimum=1)
        if heads % kv_heads:
            raise ValueError(f"num_key_value_heads: {kv_heads} does not divide "
                             f"num_attention_heads ({heads})")
        vocab = _int(config, "vocab_size", minimum=1)
        rank = _int(config, "markov_rank", minimum=0)
        head_type = str(config.get("markov_head_type", "vanilla")).lower()
        if rank > 0 and head_type not in MARKOV_HEAD_TYPES:
            raise ValueError(f"markov_head_type: {head_type!r} not in {MARKOV_HEAD_TYPES}")
        confidence = _bool(config, "enable_confidence_head", False)
        with_markov = confidence and _bool(config, "confidence_head_with_markov", False)
        if with_markov and rank == 0:
            raise ValueError("confidence_head_with_markov: requires markov_rank > 0")
        num_layers = _int(config, "num_hidden_layers", minimum=1)
        _check_layer_types(config, num_layers)
        act = config.get("hidden_act", "silu")
        if act != "silu":
            raise ValueError(f"hidden_act: only 'silu' (SwiGLU) is supported, got {act!r}")
        num_target_layers = _optional_int(config, "num_target_layers", None, minimum=1)
        mask_token_id = _int(config, "mask_token_id", minimum=0)
        if mask_token_id >= vocab:
            raise ValueError(f"mask_token_id: {mask_token_id} >= vocab_size ({vocab})")
        rope_theta, rope_scaling = _rope(config)
        return cls(
            vocab_size=vocab,
            hidden_size=hidden,
            intermediate_size=_int(config, "intermediate_size", minimum=1),
            num_hidden_layers=num_layers,
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            head_dim=_optional_int(config, "head_dim", hidden // heads, minimum=1),
            rms_norm_eps=_float(config, "rms_norm_eps", 1e-6),
            rope_theta=rope_theta,
            rope_scaling=rope_scaling,
            max_position_embeddings=_optional_int(config, "max_position_embeddings", 40960,
                                                  minimum=1),
            attention_bias=_bool(config, "attention_bias", False),
            block_size=_int(config, "block_size", minimum=1),
            mask_token_id=mask_token_id,
            target_layer_ids=_target_layer_ids(config, num_target_layers),
            num_target_layers=num_target_layers,
            markov_rank=rank,
            markov_head_type=head_type if rank > 0 else "none",
            enable_confidence_head=confidence,
            confidence_head_with_markov=with_markov,
            tie_word_embeddings=_bool(config, "tie_word_embeddings", False),
        )


def _missing(key: str) -> ValueError:
    return ValueError(f"{key}: required key missing from the DSpark config")


def _int(config: dict[str, Any], key: str, *, minimum: int) -> int:
    """A required int >= minimum."""
    if config.get(key) is None:
        raise _missing(key)
    return _optional_int(config, key, 0, minimum=minimum)


def _optional_int(config: dict[str, Any], key: str, default: int | None, *,
                  minimum: int) -> int | None:
    value = config.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{key}: must be an int >= {minimum}, got {value!r}")
    return value


def _float(config: dict[str, Any], key: str, default: float) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{key}: must be a number > 0, got {value!r}")
    return float(value)


def _bool(config: dict[str, Any], key: str, default: bool) -> bool:
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{key}: must be true or false, got {value!r}")
    return value


def _target_layer_ids(config: dict[str, Any], num_target_layers: int | None) -> tuple[int, ...]:
    key = "target_layer_ids" if "target_layer_ids" in config else "dspark_target_layer_ids"
    ids = config.get(key)
    if ids is None:
        raise _missing("target_layer_ids")
    if not isinstance(ids, (list, tuple)) or not ids:
        raise ValueError(f"{key}: must be a non-empty list of ints, got {ids!r}")
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= -1 for i in ids):
        raise ValueError(f"{key}: entries must be ints >= -1, got {ids!r}")
    if any(b <= a for a, b in zip(ids, ids[1:])):
        raise ValueError(f"{key}: must be strictly increasing, got {ids!r}")
    if num_target_layers is not None and ids[-1] >= num_target_layers:
        raise ValueError(f"{key}: {ids[-1]} is out of range for num_target_layers="
                         f"{num_target_layers}")
    return tuple(ids)


def _check_layer_types(config: dict[str, Any], num_layers: int) -> None:
    types = config.get("layer_types")
    if types is None:
        return
    if not isinstance(types, list) or len(types) != num_layers:
        raise ValueError(f"layer_types: must list {num_layers} entries, got {types!r}")
    if any(t != "full_attention" for t in types):
        raise ValueError(f"layer_types: only 'full_attention' is supported, got {types!r}")


def _rope(config: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """(theta, scaling) from v5 `rope_parameters` merged over v4 `rope_theta`/`rope_scaling`."""
    legacy = config.get("rope_scaling") or {}
    params = config.get("rope_parameters") or {}
    for key, value in (("rope_scaling", legacy), ("rope_parameters", params)):
        if not isinstance(value, dict):
            raise ValueError(f"{key}: must be a dict, got {value!r}")
    merged = {**legacy, **params}
    theta = merged.pop("rope_theta", config.get("rope_theta", 10000.0))
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 0:
        raise ValueError(f"rope_theta: must be a number > 0, got {theta!r}")
    rope_type = merged.pop("rope_type", None) or merged.pop("type", None) or "default"
    merged.pop("type", None)
    if rope_type == "default":
        return float(theta), None
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"rope_scaling.rope_type: {rope_type!r} not in {('default',) + ROPE_TYPES}")
    return float(theta), {"rope_type": rope_type, **merged}
