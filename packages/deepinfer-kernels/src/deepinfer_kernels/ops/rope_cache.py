# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The RoPE cos/sin table, with the frequency scalings the engine supports.

Formulas (facts, not code, taken from the papers and from HF transformers'
`modeling_rope_utils`, whose functions our tests compare against):
  default  inv_freq[i] = base ** (-2i / R)                      (Su et al. 2021, RoFormer)
  linear   inv_freq / factor                                    (Chen et al. 2023, PI)
  llama3   piecewise by wavelength with low/high_freq_factor     (Meta Llama 3.1 release)
  yarn     NTK-by-parts blend of interpolated and extrapolated frequencies, plus an attention
           factor on cos/sin: 0.1 * ln(factor) + 1 unless given (Peng et al. 2023, YaRN)
"""

from __future__ import annotations

import math

import torch

from deepinfer_kernels.ops._checks import check_int

ROPE_TYPES = ("default", "linear", "llama3", "yarn")


def build_rope_cache(rotary_dim: int, max_position: int, base: float,
                     rope_scaling: dict | None = None, dtype: torch.dtype = torch.float32,
                     device: torch.device | str | None = None) -> torch.Tensor:
    """Precomputes `cos_sin[p] = cat(cos(p * inv_freq), sin(p * inv_freq)) * attention_factor`.

    Angles are computed in float32 (as HF does), then cast to `dtype`.

    Args:
        rotary_dim: R, the number of rotated dimensions per head (even; R <= head size).
        max_position: P, number of positions in the table (> 0).
        base: RoPE theta (> 0).
        rope_scaling: None or a dict with "rope_type" (or legacy "type") in
            "default" | "linear" | "llama3" | "yarn" and its parameters, named as in HF
            configs: "factor"; llama3: "low_freq_factor", "high_freq_factor",
            "original_max_position_embeddings"; yarn: "original_max_position_embeddings"
            (default `max_position / factor`), "beta_fast" (32), "beta_slow" (1),
            "attention_factor", "mscale", "mscale_all_dim", "truncate" (True).
        dtype: Output dtype.
        device: Output device.

    Returns:
        [P, R] tensor: first R/2 columns cos, last R/2 columns sin.

    Raises:
        ValueError: bad `rotary_dim`, `max_position`, `base` or `rope_scaling` (named).
    """
    check_int("rotary_dim", rotary_dim, 1)
    if rotary_dim % 2:
        raise ValueError(f"rotary_dim: must be positive and even, got {rotary_dim}")
    check_int("max_position", max_position, 1)
    if not base > 0:
        raise ValueError(f"base: must be > 0, got {base}")
    if rope_scaling is not None and not isinstance(rope_scaling, dict):
        raise ValueError(f"rope_scaling: must be None or a dict, got {type(rope_scaling).__name__}")
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ValueError(f"dtype: must be a floating torch dtype, got {dtype!r}")
    inv_freq, attention_factor = rope_inv_freq(rotary_dim, base, rope_scaling, max_position)
    positions = torch.arange(max_position, dtype=torch.float32)
    angles = torch.outer(positions, inv_freq)
    cos_sin = torch.cat([angles.cos(), angles.sin()], dim=-1) * attention_factor
    return cos_sin.to(dtype=dtype, device=device)


def rope_inv_freq(rotary_dim: int, base: float, rope_scaling: dict | None,
                  max_position: int) -> tuple[torch.Tensor, float]:
    """The [R/2] float32 inverse frequencies and the cos/sin attention factor.

    Raises:
        ValueError: unknown "rope_type" or a missing/invalid scaling parameter (named).
    """
    scaling = dict(rope_scaling or {})
    rope_type = scaling.get("rope_type", scaling.get("type", "default"))
    exponents = torch.arange(0, rotary_dim, 2, dtype=torch.int64).float() / rotary_dim
    inv_freq = 1.0 / (base ** exponents)
    if rope_type == "default":
        return inv_freq, 1.0
    factor = _param(scaling, "factor")
    if rope_type == "linear":
        return inv_freq / factor, 1.0
    if rope_type == "llama3":
        return _llama3(inv_freq, factor, scaling), 1.0
    if rope_type == "yarn":
        return _yarn(rotary_dim, base, factor, scaling, max_position)
    raise ValueError(f"rope_scaling.rope_type: {rope_type!r} not in {ROPE_TYPES}")


def _param(scaling: dict, name: str, default: float | None = None) -> float:
    value = scaling.get(name, default)
    if value is None:
        raise ValueError(f"rope_scaling.{name}: required for rope_type "
                         f"{scaling.get('rope_type', scaling.get('type'))!r}")
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"rope_scaling.{name}: must be a number > 0, got {value!r}")
    return float(value)


def _llama3(inv_freq: torch.Tensor, factor: float, scaling: dict) -> torch.Tensor:
    low = _param(scaling, "low_freq_factor")
    high = _param(scaling, "high_freq_factor")
    old_len = _param(scaling, "original_max_position_embeddings")
    if high <= low:
        raise ValueError(f"rope_scaling.high_freq_factor: must exceed low_freq_factor ({low})")
    wavelen = 2 * math.pi / inv_freq
    # Long wavelengths (low frequencies) are interpolated by `factor`, short ones kept,
    # and the band between is blended linearly in old_len / wavelen.
    scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old_len / high) & (wavelen <= old_len / low)
    return torch.where(medium, blended, scaled)


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _yarn(dim: int, base: float, factor: float, scaling: dict, max_position: int
          ) -> tuple[torch.Tensor, float]:
    old_len = _param(scaling, "original_max_position_embeddings", max_position / factor)
    beta_fast = _param(scaling, "beta_fast", 32.0)
    beta_slow = _param(scaling, "beta_slow", 1.0)
    attention_factor = scaling.get("attention_factor")
    if attention_factor is None:
        mscale, mscale_all_dim = scaling.get("mscale"), scaling.get("mscale_all_dim")
        if mscale and mscale_all_dim:
            attention_factor = _yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all_dim)
        else:
            attention_factor = _yarn_mscale(factor)

    def correction_dim(rotations: float) -> float:
        # Dimension index whose wavelength completes `rotations` turns over old_len.
        return dim * math.log(old_len / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # avoids a zero-width ramp
    ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
    extrapolation_weight = 1 - ramp
    pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
    inv_extrapolation = 1.0 / pos_freqs
    inv_interpolation = 1.0 / (factor * pos_freqs)
    inv_freq = (inv_interpolation * (1 - extrapolation_weight)
                + inv_extrapolation * extrapolation_weight)
    return inv_freq, float(attention_factor)
