# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Speculative decoding inside the engine: lossless verification of draft tokens."""

from __future__ import annotations
