# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Linear layers with checkpoint-aware weight loading.

`Linear` is a plain `y = x W^T + b`. `MergedLinear` stores several checkpoint matrices that
read the same input (q/k/v, or gate/up) as one `[sum(out_sizes), in]` matrix so one matmul
serves them all; each checkpoint matrix is loaded into its row range ("shard") by index.
Tensor parallelism would slice inside `load_weight`; it is not built yet.
"""

from __future__ import annotations

import torch
from deepinfer_kernels import ops
from torch import nn


class Linear(nn.Module):
    """`y = x @ weight.T + bias`.

    Args:
        in_features: input size I.
        out_features: output size O.
        bias: whether a bias `[O]` exists.
        dtype: parameter dtype.
        device: parameter device.

    Shapes: x `[T, I]` -> `[T, O]`; weight `[O, I]` (HF layout).

    Attribute `batch_invariant` (default False; set by `set_batch_invariant`): run the
    batch-invariant matmul of `ops.linear`, whose per-row bits do not depend on the other rows.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = False,
                 dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.batch_invariant = False
        self.weight = nn.Parameter(torch.empty(out_features, in_features, dtype=dtype, device=device),
                                   requires_grad=False)
        self.bias = (nn.Parameter(torch.empty(out_features, dtype=dtype, device=device), requires_grad=False)
                     if bias else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.linear(x, self.weight, self.bias, batch_invariant=self.batch_invariant)

    def load_weight(self, param_name: str, tensor: torch.Tensor, shard: int | None = None) -> None:
        """Copies a checkpoint tensor into `weight` or `bias`.

        Raises:
            ValueError: unknown parameter, a shard index given, or a shape mismatch.
        """
        if shard is not None:
            raise ValueError(f"shard: Linear has no shards, got {shard}")
        copy_checked(self._param(param_name), tensor, param_name)

    def _param(self, param_name: str) -> nn.Parameter:
        param = getattr(self, param_name, None) if param_name in ("weight", "bias") else None
        if param is None:
            raise ValueError(f"param_name: {type(self).__name__} has no parameter {param_name!r}")
        return param


class MergedLinear(Linear):
    """Several projections of the same input fused along the output dimension.

    Args:
        in_features: input size I.
        out_sizes: output size of each shard, in order (e.g. [Hq*D, Hk*D, Hk*D] for q/k/v).
        bias, dtype, device: as for `Linear`.

    Shapes: x `[T, I]` -> `[T, sum(out_sizes)]`; shard i occupies rows
    `sum(out_sizes[:i]) : sum(out_sizes[:i+1])`.
    """

    def __init__(self, in_features: int, out_sizes: list[int], bias: bool = False,
                 dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> None:
        super().__init__(in_features, sum(out_sizes), bias, dtype, device)
        self.out_sizes = list(out_sizes)
        self.offsets = [sum(out_sizes[:i]) for i in range(len(out_sizes))]

    def load_weight(self, param_name: str, tensor: torch.Tensor, shard: int | None = None) -> None:
        """Copies one checkpoint matrix (or bias) into shard `shard`'s rows.

        Raises:
            ValueError: missing/out-of-range shard, unknown parameter, or shape mismatch.
        """
        if shard is None or not 0 <= shard < len(self.out_sizes):
            raise ValueError(f"shard: expected an index in [0, {len(self.out_sizes)}), got {shard}")
        rows = self._param(param_name).data.narrow(0, self.offsets[shard], self.out_sizes[shard])
        copy_checked(rows, tensor, f"{param_name}[shard {shard}]")

    def split(self, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Splits the fused output `[T, sum(out_sizes)]` into the shards' outputs."""
        return tuple(y.split(self.out_sizes, dim=-1))


def copy_checked(dest: torch.Tensor, src: torch.Tensor, name: str) -> None:
    """Copies `src` into `dest` (casting dtype/device) after checking shapes.

    Raises:
        ValueError: the shapes differ; the message names `name`.
    """
    if tuple(dest.shape) != tuple(src.shape):
        raise ValueError(f"{name}: checkpoint shape {tuple(src.shape)} != parameter shape {tuple(dest.shape)}")
    with torch.no_grad():
        dest.copy_(src)
