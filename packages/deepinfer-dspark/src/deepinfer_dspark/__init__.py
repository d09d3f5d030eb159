# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DeepInfer DSpark: speculative decoding with confidence-scheduled verification.

The DSpark drafter (parallel backbone over projected target features, Markov heads, confidence
head) and its DeepSpec checkpoint loader; the engine proposers (`dspark`, `ngram`, entry points of
group `deepinfer.proposers`); prompt lookup; the load-aware prefix scheduler (DSpark Algorithm 1 and the
stale-capacity production variant), the steps-per-second profile it reads, sequential
temperature scaling of confidences, and speculative-decoding metrics.
"""

from __future__ import annotations

from deepinfer_dspark.calibration import SequentialTemperatureScaling, cumulative_ece, expected_calibration_error
from deepinfer_dspark.checkpoint import load_checkpoint, load_state_dict
from deepinfer_dspark.confidence import calibrated_confidence
from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.context_pool import ContextPool
from deepinfer_dspark.draft_runner import DraftOutput, DraftRequest, DraftSampling, DSparkDraftRunner
from deepinfer_dspark.drafter import DSparkDrafter
from deepinfer_dspark.metrics import SpecMetrics
from deepinfer_dspark.ngram import NgramProposer
from deepinfer_dspark.factories import dspark_factory, ngram_factory
from deepinfer_dspark.ngram import NgramSpecProposer
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.scheduler import (
    StaleCapacityScheduler,
    prefix_survival,
    schedule_prefixes,
    top_k_prefixes,
    verify_capacity,
)
from deepinfer_dspark.sps import SPSProfile, measure

__all__ = [
    "ContextPool",
    "DSparkConfig",
    "DSparkDraftRunner",
    "DSparkDrafter",
    "DSparkProposer",
    "DraftOutput",
    "DraftRequest",
    "DraftSampling",
    "NgramProposer",
    "NgramSpecProposer",
    "SPSProfile",
    "SequentialTemperatureScaling",
    "SpecMetrics",
    "StaleCapacityScheduler",
    "calibrated_confidence",
    "cumulative_ece",
    "dspark_factory",
    "expected_calibration_error",
    "load_checkpoint",
    "load_state_dict",
    "measure",
    "ngram_factory",
    "prefix_survival",
    "schedule_prefixes",
    "top_k_prefixes",
    "verify_capacity",
]
