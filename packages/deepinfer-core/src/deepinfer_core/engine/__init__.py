# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Device-free engine: requests, KV block tables, scheduler, engine core, detokenizer."""

from __future__ import annotations
