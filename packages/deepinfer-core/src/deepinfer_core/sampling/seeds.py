# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Request seeds: fold any Python int into int64 and derive the seeds of `n > 1` children."""

from __future__ import annotations

_MASK64 = (1 << 64) - 1
_GOLDEN64 = 0x9E3779B97F4A7C15


def to_int64(seed: int) -> int:
    """Folds an arbitrary int into the signed int64 range (two's complement of its low 64 bits)."""
    seed &= _MASK64
    return seed - (1 << 64) if seed >= 1 << 63 else seed


def derive_seed(seed: int, index: int) -> int:
    """Seed of completion `index` of a request seeded with `seed` (signed int64).

    Index 0 keeps the request's seed, so `n=1` and the first of `n>1` completions agree; other
    indices pass `seed + index * golden_ratio_64` through the SplitMix64 finaliser (Steele, Lea,
    Flood 2014, "Fast splittable pseudorandom number generators"), giving distinct,
    well-mixed seeds.
    """
    if index == 0:
        return to_int64(seed)
    z = (seed + index * _GOLDEN64) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return to_int64(z ^ (z >> 31))
