# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Token sampling: greedy, temperature, top-k, top-p, min-p, with per-row seeded draws."""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import dispatch
from deepinfer_kernels.ops._checks import check_same_device, check_size, check_int, check_tensor, host_values


def sample(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
           top_p: torch.Tensor, min_p: torch.Tensor, seeds: torch.Tensor, steps: torch.Tensor,
           *, backend: str | None = None) -> torch.Tensor:
    """Samples one token per row. Each row depends only on its own inputs (batch invariant).

    Row b with `temperature[b] == 0` is greedy: argmax of the logits, ties to the lowest
    index. Otherwise, in order (each filter acts on the renormalised output of the previous
    one, like HF's TopK -> TopP -> MinP warpers):
      1. `p = softmax(logits / T)` in float32;
      2. top_k > 0: keep tokens whose probability is >= the k-th largest (ties kept);
      3. top_p < 1: keep the smallest set of most probable tokens whose total is >= top_p
         (at least one token; ties ordered by index);
      4. min_p > 0: drop tokens with `p < min_p * max(p)`;
      5. renormalise and draw by the exponential race `argmax_v(p_v / E_v)`, `E_v = -ln u_v`
         (equivalent to drawing from p), where `u_v` in (0, 1) comes from a counter-based
         32-bit integer hash of `(seeds[b], steps[b], v)`: the same bits on every device.
         The hash is documented in `deepinfer_kernels.backends.reference.sampling`.

    Args:
        logits: [B, V] float32. B may be 0.
        temperature: [B] float32, >= 0.
        top_k: [B] int64; <= 0 disables.
        top_p: [B] float32 in (0, 1]; 1 disables.
        min_p: [B] float32 in [0, 1]; 0 disables.
        seeds: [B] int64 (any value; all 64 bits are used).
        steps: [B] int64, e.g. the number of tokens the request generated so far.
        backend: Implementation to use; None selects.

    Returns:
        [B] int64 token ids.

    Raises:
        ValueError: a shape, dtype or device does not match, the vocabulary is empty, or (CPU
            tensors only) a parameter is out of its range (the message names the field). On an
            accelerator the ranges are preconditions (checking would synchronise with the
            device); the engine validates sampling parameters when a request arrives.
    """
    check_tensor("logits", logits, 2, (torch.float32,))
    batch = logits.shape[0]
    for name, t, dtype in (("temperature", temperature, torch.float32),
                           ("top_k", top_k, torch.int64), ("top_p", top_p, torch.float32),
                           ("min_p", min_p, torch.float32), ("seeds", seeds, torch.int64),
                           ("steps", steps, torch.int64)):
        check_tensor(name, t, 1, (dtype,))
        check_size(name, t, 0, batch, "rows of logits")
    check_same_device([("logits", logits), ("temperature", temperature), ("top_k", top_k),
                       ("top_p", top_p), ("min_p", min_p), ("seeds", seeds), ("steps", steps)])
    _check_values(logits, temperature, top_p, min_p)
    c = [t.contiguous() for t in (temperature, top_k, top_p, min_p, seeds, steps)]
    return dispatch("sample", logits, backend, logits, *c)


def _check_values(logits: torch.Tensor, temperature: torch.Tensor, top_p: torch.Tensor,
                  min_p: torch.Tensor) -> None:
    """A non-empty vocabulary; on CPU tensors, the documented parameter ranges."""
    if logits.shape[0] and logits.shape[1] == 0:
        raise ValueError("logits: the vocabulary (dimension 1) is empty")
    for name, t, ok, text in (("temperature", temperature, lambda x: x >= 0, ">= 0"),
                              ("top_p", top_p, lambda x: (x > 0) & (x <= 1), "in (0, 1]"),
                              ("min_p", min_p, lambda x: (x >= 0) & (x <= 1), "in [0, 1]")):
        if host_values(t) and not bool(ok(t).all()):   # NaN fails every comparison
            bad = int((~ok(t)).nonzero()[0])
            raise ValueError(f"{name}: row {bad} is {float(t[bad])}, must be {text}")


def sampling_probs(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
                   top_p: torch.Tensor, min_p: torch.Tensor) -> torch.Tensor:
    """The distribution `sample` draws from: steps 1-4 of its docstring, renormalised.

    Speculative decoding needs it to score draft tokens against the target with the filters
    applied identically to both (Leviathan et al. 2023, "Fast Inference from Transformers via
    Speculative Decoding", section 2.3). Rows with `temperature == 0` are computed as if T = 1.

    Args:
        logits: [B, V] float32.
        temperature, top_k, top_p, min_p: [B], as for `sample`.

    Returns:
        [B, V] float32 probabilities; each row sums to 1.

    Raises:
        ValueError: as for `sample`.
    """
    check_tensor("logits", logits, 2, (torch.float32,))
    batch = logits.shape[0]
    for name, t, dtype in (("temperature", temperature, torch.float32),
                           ("top_k", top_k, torch.int64), ("top_p", top_p, torch.float32),
                           ("min_p", min_p, torch.float32)):
        check_tensor(name, t, 1, (dtype,))
        check_size(name, t, 0, batch, "rows of logits")
    check_same_device([("logits", logits), ("temperature", temperature), ("top_k", top_k),
                       ("top_p", top_p), ("min_p", min_p)])
    _check_values(logits, temperature, top_p, min_p)
    from deepinfer_kernels.backends.reference.sampling import filtered_probs
    return filtered_probs(logits, temperature, top_k, top_p, min_p)


def keyed_uniforms(seeds: torch.Tensor, steps: torch.Tensor, n: int) -> torch.Tensor:
    """Uniform draws that are a pure function of `(seeds[b], steps[b], index)`.

    The counter-based hash `sample` uses (documented in
    `deepinfer_kernels.backends.reference.sampling`): the same bits on every device and in
    every batch. Callers that need several independent streams per row (e.g. speculative
    verification's accept test and residual draw) key them by distinct `steps` values.

    Args:
        seeds: [B] int64.
        steps: [B] int64.
        n: number of draws per row, >= 0.

    Returns:
        [B, n] float32, every value strictly inside (0, 1).

    Raises:
        ValueError: a shape or dtype does not match, or `n` < 0 (the message names the field).
    """
    check_tensor("seeds", seeds, 1, (torch.int64,))
    check_tensor("steps", steps, 1, (torch.int64,))
    check_size("steps", steps, 0, seeds.shape[0], "rows of seeds")
    check_same_device([("seeds", seeds), ("steps", steps)])
    check_int("n", n, 0)
    from deepinfer_kernels.backends.reference.sampling import uniforms
    return uniforms(seeds, steps, n)
