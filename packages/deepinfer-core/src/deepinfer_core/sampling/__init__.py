# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Sampling: logits processors, ops.sample and logprobs."""

from __future__ import annotations
