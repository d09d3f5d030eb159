# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`LookupAssist` forwards the attributes core and the step logger read every step to the wrapped
proposer without `__getattr__` (session 30's helper: its miss cost ~5 us a step on the H200's host),
and writes to them still land on the wrapped proposer (tests patch DSpark through the wrapper)."""

from __future__ import annotations

import pytest

from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.no_drafter import NoDrafter
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
FLAT = SPSProfile([1, 64], [1000.0, 1000.0])
HOT = ("wants_features", "observe_step", "observe_many", "target_layer_ids", "drafted_rounds", "pending", "runner")


@pytest.fixture
def counted(monkeypatch):
    """`LookupAssist.__getattr__` wrapped to count the names it is asked for."""
    asked = []
    plain = LookupAssist.__getattr__

    def counting(self, name):
        asked.append(name)
        return plain(self, name)

    monkeypatch.setattr(LookupAssist, "__getattr__", counting)
    return asked


def test_hot_reads_skip_getattr_and_match_the_inner_proposer(fake_runner, counted) -> None:
    proposer = DSparkProposer(fake_runner(K, 0.9), K, SPSProfile([1, 64], [500.0] * 2), decode=FLAT)
    lookup = LookupAssist(proposer, 2)
    for name in HOT:
        mine, theirs = getattr(lookup, name), getattr(proposer, name)
        assert mine == theirs, name   # (bound methods compare by function and instance)
    assert counted == []
    assert lookup.wants_features() == proposer.wants_features()
    lookup.num_tokens   # a name not forwarded still works, through __getattr__
    assert counted == ["num_tokens"]


def test_writes_to_forwarded_names_land_on_the_inner_proposer(fake_runner) -> None:
    proposer = DSparkProposer(fake_runner(K, 0.9), K, SPSProfile([1, 64], [500.0] * 2), decode=FLAT)
    lookup = LookupAssist(proposer, 2)
    lookup.wants_features = lambda: False
    assert proposer.wants_features() is False and lookup.wants_features() is False
    assert "wants_features" not in lookup.__dict__
    lookup.drafted_rounds = 7
    assert proposer.drafted_rounds == 7 == lookup.drafted_rounds
    del lookup.wants_features   # the patch removed: DSpark's own method is back
    assert "wants_features" not in proposer.__dict__
    assert lookup.wants_features() == type(proposer).wants_features(proposer)


def test_a_name_the_inner_proposer_lacks_reads_as_missing() -> None:
    """NoDrafter has no `observe_step` / `runner` ...: core's `getattr(proposer, name, None)` must
    see None (core then slices `observe`); it does say it wants no features."""
    lookup = LookupAssist(NoDrafter(K, FLAT), 2)
    assert lookup.wants_features() is False
    for name in HOT[1:]:
        assert getattr(lookup, name, None) is None, name
        with pytest.raises(AttributeError, match=name):
            getattr(lookup, name)
    assert not hasattr(lookup, "observe_step")
