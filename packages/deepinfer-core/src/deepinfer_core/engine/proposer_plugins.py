# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Proposer plug-ins: found by name in entry-point group `deepinfer.proposers` (see
`deepinfer_core.interfaces.Proposer`), their configs checked before the target loads, built with
the target's facts once it has."""

from __future__ import annotations

from deepinfer_core.interfaces import Proposer

ENTRY_POINT_GROUP = "deepinfer.proposers"


def load_proposer(spec_config: dict, model_info: dict) -> Proposer:
    """Builds the proposer named by `spec_config["method"]` from entry-point group `deepinfer.proposers`.

    A `Proposer` instance given as `spec_config["proposer"]` is used as is (tests, custom drafters).

    Raises:
        ValueError: no installed plug-in provides the method (names `speculative_config.method`
            and lists the installed ones), or the object built is not a Proposer.
    """
    if spec_config.get("proposer") is not None:
        proposer = spec_config["proposer"]
    else:
        proposer = _factory(spec_config["method"])(spec_config, model_info)
    if not isinstance(proposer, Proposer):
        raise ValueError("speculative_config: the proposer lacks propose/commit/remove")
    return proposer


def check_proposer_config(spec_config: dict | None) -> None:
    """The plug-in's own checks of `spec_config`, run before the engine loads the target: the
    factory's optional `validate(spec_config)` (see `Proposer`), so that a misspelt key fails in
    milliseconds, not after the weights load. Nothing for a given `proposer` instance.

    Raises:
        ValueError: no installed plug-in provides the method (as `load_proposer`), or what
            `validate` raises (naming `speculative_config.<key>`).
    """
    if spec_config is None or spec_config.get("proposer") is not None:
        return
    validate = getattr(_factory(spec_config["method"]), "validate", None)
    if callable(validate):
        validate(spec_config)


def _factory(method: str):
    """The proposer factory of entry point `method` in group `deepinfer.proposers`.

    Raises:
        ValueError: no installed plug-in provides it (names `speculative_config.method` and lists
            the installed ones).
    """
    from importlib.metadata import entry_points

    found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if method not in found:
        raise ValueError(f"speculative_config.method: no proposer {method!r} installed "
                         f"(entry points in {ENTRY_POINT_GROUP!r}: {sorted(found)}; "
                         f"`pip install deepinfer-dspark` provides 'ngram' and 'dspark')")
    return found[method].load()
