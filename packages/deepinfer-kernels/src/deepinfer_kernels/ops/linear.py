# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Dense linear layer `x @ weight.T + bias`, optionally batch invariant."""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import dispatch
from deepinfer_kernels.ops._checks import (FLOAT_DTYPES, check_flag, check_same_device,
                                           check_size, check_tensor)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
           batch_invariant: bool = False, backend: str | None = None) -> torch.Tensor:
    """`out = x @ weight.T + bias` (the `torch.nn.functional.linear` formula, HF weight layout).

    With `batch_invariant=True`, row t of `out` is bitwise a function of row t of `x` (and
    of `weight`, `bias`) only: it does not change with the number of rows T, the row's index,
    or the values of the other rows. Implementations achieve this with one fixed reduction
    order over K per output element: no split-K, no tile or algorithm choice that depends on
    T (Thinking Machines, "Defeating Nondeterminism in LLM Inference", 2025). With False the
    fastest available GEMM runs (e.g. BLAS picks a different algorithm for T = 1 and T > 1,
    so a row's bits may change with T).
    16-bit inputs are accumulated in float32 and rounded once to `x.dtype`.

    Args:
        x: [T, K] float32/float16/bfloat16; T may be 0.
        weight: [N, K], same dtype as `x`.
        bias: None or [N], same dtype as `x`.
        batch_invariant: Require per-row invariant results (see above).
        backend: Implementation to use (see `deepinfer_kernels.ops`); None selects.

    Returns:
        [T, N] in `x.dtype`.

    Raises:
        ValueError: a shape, dtype or device does not match, or `batch_invariant` is not a
            bool (the message names the field).
    """
    check_tensor("x", x, 2, FLOAT_DTYPES)
    check_tensor("weight", weight, 2, (x.dtype,))
    check_size("weight", weight, 1, x.shape[1], "in features of x")
    if bias is not None:
        check_tensor("bias", bias, 1, (x.dtype,))
        check_size("bias", bias, 0, weight.shape[0], "out features of weight")
    check_flag("batch_invariant", batch_invariant)
    check_same_device([("x", x), ("weight", weight), ("bias", bias)])
    return dispatch("linear", x, backend, x, weight, bias, batch_invariant=batch_invariant)
