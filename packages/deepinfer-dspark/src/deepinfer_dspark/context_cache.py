# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""ContextCache: one request's draft context K/V, for every draft layer.

DSpark injects the target's features into each draft layer as extra keys/values (see
`deepinfer_dspark.drafter`). They depend only on the committed tokens' features and positions,
so they are computed once per committed position and kept here: entry i holds position i
(positions are contiguous from 0). Speculative rounds append the newly committed positions and
crop on rollback; the transient block K/V is never stored.
"""

from __future__ import annotations

import torch


class ContextCache:
    """Growable `[L, capacity, H_kv, D]` key and value buffers with a fill length.

    Args:
        num_layers: L, draft layers.
        num_kv_heads: H_kv.
        head_dim: D.
        dtype, device: buffer placement.
        capacity: initial number of positions allocated (doubles when exceeded).

    Memory: `2 * L * H_kv * D * itemsize` bytes per position (DSpark Qwen3-8B draft in bf16:
    2 * 5 * 8 * 128 * 2 = 20 KiB).
    """

    def __init__(self, num_layers: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype,
                 device: torch.device | str | None = None, capacity: int = 64) -> None:
        shape = (num_layers, max(capacity, 1), num_kv_heads, head_dim)
        self._k = torch.zeros(shape, dtype=dtype, device=device)
        self._v = torch.zeros(shape, dtype=dtype, device=device)
        self._length = 0

    def __len__(self) -> int:
        """Number of positions stored (the next position to append)."""
        return self._length

    @property
    def keys(self) -> torch.Tensor:
        """`[L, len, H_kv, D]` view of the stored keys."""
        return self._k[:, :self._length]

    @property
    def values(self) -> torch.Tensor:
        """`[L, len, H_kv, D]` view of the stored values."""
        return self._v[:, :self._length]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> None:
        """Stores the K/V of positions `len .. len + n - 1`.

        Args:
            k, v: `[L, n, H_kv, D]` in the cache's dtype and device.

        Raises:
            ValueError: a shape, dtype or device does not match the cache (names `k`/`v`).
        """
        expected = (self._k.shape[0], k.shape[1]) + tuple(self._k.shape[2:])
        for name, t in (("k", k), ("v", v)):
            if tuple(t.shape) != expected:
                raise ValueError(f"{name}: shape {tuple(t.shape)} != expected {expected}")
            if t.dtype != self._k.dtype or t.device != self._k.device:
                raise ValueError(f"{name}: {t.dtype} on {t.device} != cache {self._k.dtype} on "
                                 f"{self._k.device}")
        end = self._length + k.shape[1]
        self._reserve(end)
        self._k[:, self._length:end] = k
        self._v[:, self._length:end] = v
        self._length = end

    def crop(self, length: int) -> None:
        """Keeps positions `0 .. length - 1` and forgets the rest.

        Raises:
            ValueError: `length` is negative or above `len(self)`.
        """
        if not 0 <= length <= self._length:
            raise ValueError(f"length: must be in [0, {self._length}], got {length}")
        self._length = length

    def _reserve(self, size: int) -> None:
        capacity = self._k.shape[1]
        if size <= capacity:
            return
        while capacity < size:
            capacity *= 2
        grown_k = self._k.new_zeros((self._k.shape[0], capacity) + tuple(self._k.shape[2:]))
        grown_v = torch.zeros_like(grown_k)
        grown_k[:, :self._length] = self.keys
        grown_v[:, :self._length] = self.values
        self._k, self._v = grown_k, grown_v
