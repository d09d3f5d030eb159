# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DeepInfer core: engine, scheduler, paged KV cache, models, sampler.

Public API: `LLM(model=...).generate(prompts, SamplingParams(...))` / `.chat(messages, ...)`.
"""

from __future__ import annotations

from deepinfer_core.config import EngineConfig
from deepinfer_core.llm import LLM
from deepinfer_core.outputs import CompletionOutput, Logprob, RequestMetrics, RequestOutput
from deepinfer_core.sampling_params import SamplingParams
from deepinfer_core.structured.params import StructuredOutputs

__all__ = [
    "LLM",
    "CompletionOutput",
    "EngineConfig",
    "Logprob",
    "RequestMetrics",
    "RequestOutput",
    "SamplingParams",
    "StructuredOutputs",
]
