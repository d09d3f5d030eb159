# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Structured output: constrain a request's output to a JSON schema, regex, grammar or choice.

`params.StructuredOutputs` (the request field), `backend.GuidanceBackend` (llguidance),
`grammar_cache.GrammarCache` (compile once per spec, in threads), `state.GrammarState` (one
request's matcher: accept / validate / rollback / mask), `manager.StructuredOutputManager` (the
engine's per-step calls). Only `backend.py` imports llguidance, and only when first used.
"""

from __future__ import annotations

from deepinfer_core.structured.params import StructuredOutputs

__all__ = ["StructuredOutputs"]
