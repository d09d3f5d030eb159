# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reading `speculative_config` and `model_info` for the factories (`deepinfer_dspark.factories`):
each key checked by name and type, a bad value raised as a ValueError naming it. Device-free."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepinfer_dspark.draft_costs import check_probe_share
from deepinfer_dspark.lookup_assist import WINDOW as LOOKUP_WINDOW
from deepinfer_dspark.sps import SPSProfile


ENGINE_KEYS = frozenset({"method", "num_speculative_tokens", "proposer"})   # read by deepinfer-core
NGRAM_KEYS = frozenset({"scheduling", "prompt_lookup_min", "prompt_lookup_max", "decode_profile"})
DSPARK_KEYS = frozenset({"model", "scheduling", "sps_profile", "sps_profile_k1", "calibration", "probe_every",
                         "decode_profile", "max_probe_every", "defer_context", "measure_step_times",
                         "measure_round_times", "decline_features", "prefix_pricing", "opening_tokens",
                         "prompt_lookup_min", "measure_plain_steps", "min_gain", "tail_rounds",
                         "judge_stragglers", "lookup_loops", "bound_only", "overlap_bookkeeping",
                         "lease_rounds", "bound_only_untimed", "pre_flush", "opening_runs", "drained_batches",
                         "probe_share", "acceptance_age_rounds", "young_runs",
                         "probe_transition", "run_noise", "rescale_stragglers", "probe_share_floor",
                         "resume_bound", "judge_frontier", "probe_headroom"})


def _check_keys(spec_config: dict, method: str, known: frozenset) -> None:
    """Raises ValueError naming the first key neither the engine nor `method` reads."""
    unknown = sorted(str(key) for key in spec_config if key not in ENGINE_KEYS | known)
    if unknown:
        raise ValueError(f"speculative_config.{unknown[0]}: unknown key for method {method!r} "
                         f"(known: {', '.join(sorted(ENGINE_KEYS | known))})")


def _profile(key: str, value: Any) -> SPSProfile:
    """An `SPSProfile` given as one, as its dict form (`SPSProfile.to_dict`), or as a JSON path."""
    if isinstance(value, SPSProfile):
        return value
    if isinstance(value, dict):
        return _load(key, SPSProfile.from_dict, value, path=False)
    if not isinstance(value, (str, Path)):
        raise ValueError(f"speculative_config.{key}: expected an SPSProfile, its dict form or a JSON path, "
                         f"got {type(value).__name__}")
    return _load(key, SPSProfile.load, value)


def _lookup_min(spec_config: dict, default: int, minimum: int) -> int:
    """`prompt_lookup_min` for `LookupAssist`: an int >= `minimum`, below its search window."""
    value = _int_key(spec_config, "prompt_lookup_min", default, minimum)
    if value >= LOOKUP_WINDOW:
        raise ValueError(f"speculative_config.prompt_lookup_min: must be below {LOOKUP_WINDOW} (the tokens "
                         f"prompt lookup searches), got {value}")
    return value


def _int_key(spec_config: dict, key: str, default: int, minimum: int, where: str = "speculative_config") -> int:
    """The int at `key` (absent or None: `default`), at least `minimum`; a bad value raises
    ValueError naming `where.key`."""
    value = spec_config.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{where}.{key}: must be an int >= {minimum}, got {value!r}")
    return value


def _needs_lookup(spec_config: dict, key: str, lookup: int) -> bool:
    """`tail_rounds` or `lookup_loops` (absent or None: False): a bool; True needs prompt lookup
    (`LookupAssist` tracks the requests, hears `draining` and searches them)."""
    on = _bool_key(spec_config, key, False)
    if on and not lookup:
        raise ValueError(f"speculative_config.{key}: works through the prompt lookup wrapper; it needs "
                         f"prompt_lookup_min >= 1")
    return on


def _min_gain(spec_config: dict) -> float:
    """`min_gain` (absent or None: 1.0): a finite number in [1, 10]."""
    value = spec_config.get("min_gain")
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1.0 <= value <= 10.0:
        raise ValueError(f"speculative_config.min_gain: must be a number in [1, 10] (the gain over plain "
                         f"decoding a drafted round must exceed), got {value!r}")
    return float(value)


def _probe_share(spec_config: dict, key: str = "probe_share") -> float | None:
    """`probe_share` (absent or None: None, `draft_costs.PROBE_SHARE`), or `probe_share_floor` (absent
    or None: None, off): a number in (0, 1]."""
    value = spec_config.get(key)
    return None if value is None else check_probe_share(value, key)


def _bool_key(spec_config: dict, key: str, default: bool) -> bool:
    """The bool at `key` (absent or None: `default`)."""
    value = spec_config.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"speculative_config.{key}: must be a bool, got {value!r}")
    return value


def _frontier_key(spec_config: dict, stragglers_default: bool) -> bool:
    """`judge_frontier` (absent or None: False), a bool; True needs `judge_stragglers` on (its
    `Stragglers` feeds the `Frontier`)."""
    value = _bool_key(spec_config, "judge_frontier", False)
    if value and not _bool_key(spec_config, "judge_stragglers", stragglers_default):
        raise ValueError("speculative_config.judge_frontier: caps the straggler factor of judge_stragglers, "
                         "so it needs judge_stragglers true")
    return value


def _load(key: str, loader: Callable[[Any], Any], source: Any, path: bool = True) -> Any:
    """`loader(source)`, with a read or format error reported as a ValueError naming
    `speculative_config.<key>`; with `path`, `source` must be a str or Path."""
    if path and not isinstance(source, (str, Path)):
        raise ValueError(f"speculative_config.{key}: must be a path (str or Path), got {source!r}")
    try:
        return loader(source)
    except Exception as exc:   # any reader's error (safetensors raises its own), named with the key and source
        raise ValueError(f"speculative_config.{key}: cannot load {source!r}: {type(exc).__name__}: {exc}") from exc


def _is_dir(path: str | Path) -> bool:
    """Whether `path` is a folder; False for a path the system cannot look up (too long, ...)."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def _info_int(model_info: dict, key: str, default: int | None, minimum: int = 1) -> int | None:
    """`model_info[key]` (absent or None: `default`), which must be an int >= `minimum`."""
    return _int_key(model_info, key, default, minimum, where="model_info")
