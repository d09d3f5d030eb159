# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""HF transformers `generate` on a benchmark workload, for same-run ratios."""

from __future__ import annotations

import time
from pathlib import Path


def load_hf_model(model_path: str | Path, dtype=None, device: str = "cpu", dummy: bool = False):
    """Load a transformers causal LM from an HF folder or a single GGUF file (dequantized).

    Args:
        model_path: HF folder or `.gguf` file.
        dtype: torch dtype (default float32).
        device: where the model runs.
        dummy: random weights from the folder's config.json (for `--load-format dummy` runs:
            speed comparisons of shapes whose checkpoints are not available).
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # keep the benchmark's own output readable
    path = Path(model_path)
    dtype = dtype or torch.float32
    if dummy:  # initialised on the target device: random init of an 8B model on a slow host takes minutes
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(path), dtype=dtype)
    elif path.suffix == ".gguf":
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype)
    else:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    return model.to(device).eval()


def hf_latency(model, prompts: list[list[int]], output_len: int) -> tuple[float, float]:
    """(TTFT, TPOT) in seconds of one `generate` call over equal-length `prompts` (no padding).

    TTFT is a 1-token `generate`; TPOT = (time of the full `output_len`-token generate - TTFT) /
    (output_len - 1). EOS is suppressed (`min_new_tokens`), greedy.
    """
    import torch

    device = next(model.parameters()).device
    ids = torch.tensor(prompts, device=device)
    pad = model.config.pad_token_id if model.config.pad_token_id is not None else 0

    def timed(n: int) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        with torch.inference_mode():
            model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                           min_new_tokens=n, do_sample=False, pad_token_id=pad)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - start

    timed(1)  # first call at this batch shape: allocator and kernel selection, excluded
    ttft = timed(1)
    return ttft, (timed(output_len) - ttft) / (output_len - 1)


def run_hf(model_path, workload, batch_size: int, temperature: float, warmup: bool, result_cls,
           dtype=None, device: str = "cpu", dummy: bool = False):
    """Run the workload with `model.generate` in left-padded batches of `batch_size`.

    Every request of a batch decodes `max(output_lens in batch)` tokens (HF decodes a batch in
    lockstep); each request counts only its own output length, so both engines are credited with
    exactly the same emitted tokens. EOS is suppressed (`min_new_tokens`) to mirror `ignore_eos`.
    """
    import torch

    model = load_hf_model(model_path, dtype=dtype, device=device, dummy=dummy)
    pad = model.config.pad_token_id if model.config.pad_token_id is not None else 0

    def generate(prompts, outs):
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        n = max(outs)
        sample = temperature > 0
        with torch.inference_mode():
            model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                           do_sample=sample, temperature=temperature if sample else None,
                           top_p=None, top_k=None, pad_token_id=pad)

    if warmup:
        generate([workload.prompts[0][:16]], [4])
    start = time.perf_counter()
    for i in range(0, len(workload.prompts), batch_size):
        generate(workload.prompts[i:i + batch_size], workload.output_lens[i:i + batch_size])
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    return result_cls("HF transformers", elapsed, len(workload.prompts), workload.prompt_tokens,
                      sum(workload.output_lens))
