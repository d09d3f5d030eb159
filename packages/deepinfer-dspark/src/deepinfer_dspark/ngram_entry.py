# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The `ngram` entry point of group `deepinfer.proposers` (see `deepinfer_core.interfaces.Proposer`):
prompt lookup every step, or load-aware where a round pays. Its `speculative_config` keys are listed
in `factories.py`'s docstring with `dspark`'s; `factories` re-exports `ngram_factory`."""

from __future__ import annotations

from typing import Any

from deepinfer_dspark.config_keys import NGRAM_KEYS, _check_keys, _int_key, _lookup_min, _profile
from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.ngram import NgramSpecProposer
from deepinfer_dspark.no_drafter import NoDrafter


def ngram_factory(spec_config: dict, model_info: dict) -> NgramSpecProposer | LookupAssist:
    """Entry point `ngram`: prompt lookup every step (`NgramSpecProposer`), or with
    `scheduling: load_aware` only where a round pays (`LookupAssist` over `NoDrafter`).

    Raises:
        ValueError: `scheduling` is neither "fixed" nor "load_aware", `prompt_lookup_min` is not
            an int >= 1 (below 1024 with "load_aware"), `prompt_lookup_max` not an int >= it,
            a key used with the other scheduling only, a bad `decode_profile`, or a key the
            n-gram proposer does not know (a misspelt knob would otherwise do nothing); the
            message names `speculative_config.<key>`.
    """
    settings = _ngram_settings(spec_config)
    if settings["scheduling"] == "fixed":
        return NgramSpecProposer(settings["min_n"], settings["max_n"])
    return LookupAssist(NoDrafter(spec_config["num_speculative_tokens"], settings["decode"]), settings["min_n"])


def _ngram_settings(spec_config: dict) -> dict[str, Any]:
    """The checked settings of an `ngram` config (see `ngram_factory`)."""
    _check_keys(spec_config, "ngram", NGRAM_KEYS)
    scheduling = spec_config.get("scheduling")
    scheduling = "fixed" if scheduling is None else scheduling
    if scheduling not in ("fixed", "load_aware"):
        raise ValueError(f"speculative_config.scheduling: expected 'fixed' or 'load_aware' for method 'ngram', "
                         f"got {scheduling!r}")
    if scheduling == "fixed":
        if spec_config.get("decode_profile") is not None:
            raise ValueError("speculative_config.decode_profile: only used with scheduling='load_aware'")
        low = _int_key(spec_config, "prompt_lookup_min", 1, 1)
        return dict(scheduling=scheduling, min_n=low,
                    max_n=_int_key(spec_config, "prompt_lookup_max", max(4, low), low), decode=None)
    if spec_config.get("prompt_lookup_max") is not None:
        raise ValueError("speculative_config.prompt_lookup_max: only used with scheduling='fixed' (load-aware "
                         "lookup matches prompt_lookup_min tokens and prices a match by its length)")
    low = _lookup_min(spec_config, 2, 1)
    decode = spec_config.get("decode_profile")
    return dict(scheduling=scheduling, min_n=low, max_n=None,
                decode=None if decode is None else _profile("decode_profile", decode))


# Checked by the engine before it loads the target (`deepinfer_core.interfaces.Proposer`).
ngram_factory.validate = _ngram_settings
