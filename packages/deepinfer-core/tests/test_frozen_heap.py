# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`EngineConfig.freeze_heap`: during an `LLM.generate` / `LLM.chat` run the objects alive at its
start are frozen out of the garbage collector's passes, and only then; a process that froze
objects itself, or disabled the collector, is left alone; the run's outputs do not change."""

from __future__ import annotations

import gc

import pytest

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.engine.frozen_heap import frozen_heap

PARAMS = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
PROMPTS = [{"prompt_token_ids": [5, 6, 7, 8]}, {"prompt_token_ids": [9, 10, 11]}]


@pytest.fixture
def clean_gc():
    """The collector enabled and nothing frozen, before and after the test."""
    was = gc.isenabled()
    gc.enable()
    gc.unfreeze()
    yield
    gc.unfreeze()
    if not was:
        gc.disable()


def _llm(tiny_checkpoint, **kw) -> LLM:
    return LLM(str(tiny_checkpoint("llama")), load_format="dummy", dtype="float32", max_model_len=64,
               block_size=4, kv_cache_memory=8 << 20, seed=3, **kw)


def _frozen_during_run(llm: LLM) -> list[int]:
    """`gc.get_freeze_count()` at every step of a run of PROMPTS, and the outputs' tokens."""
    seen: list[int] = []
    step = llm.engine.step

    def counted():
        seen.append(gc.get_freeze_count())
        return step()
    llm.engine.step = counted
    try:
        outs = llm.generate(PROMPTS, PARAMS)
    finally:
        llm.engine.step = step
    assert all(o.error is None for o in outs)
    return seen, [o.outputs[0].token_ids for o in outs]


def test_a_run_freezes_the_heap_and_unfreezes_it_after(clean_gc, tiny_checkpoint) -> None:
    llm = _llm(tiny_checkpoint)
    assert llm.config.freeze_heap is True   # the default
    alive = len(gc.get_objects())
    seen, tokens = _frozen_during_run(llm)
    assert seen and min(seen) >= alive // 2   # every step ran with the start-up heap frozen
    assert gc.get_freeze_count() == 0          # and it is collectable again after the run

    off = _llm(tiny_checkpoint, freeze_heap=False)
    seen_off, tokens_off = _frozen_during_run(off)
    assert seen_off and set(seen_off) == {0}
    assert tokens_off == tokens   # the collector's schedule changes no output


def test_a_run_that_raises_unfreezes_the_heap(clean_gc, tiny_checkpoint) -> None:
    llm = _llm(tiny_checkpoint)
    step = llm.engine.step

    def failing():
        assert gc.get_freeze_count() > 0
        raise RuntimeError("boom")
    llm.engine.step = failing
    with pytest.raises(RuntimeError, match="boom"):
        llm.generate(PROMPTS, PARAMS)
    llm.engine.step = step
    assert gc.get_freeze_count() == 0
    outs = llm.generate(PROMPTS, PARAMS)   # the engine runs on after the failed call
    assert all(o.error is None and len(o.outputs[0].token_ids) == 6 for o in outs)


def test_objects_the_caller_froze_stay_frozen_and_a_disabled_collector_stays_off(clean_gc, tiny_checkpoint) -> None:
    llm = _llm(tiny_checkpoint)
    gc.freeze()
    mine = gc.get_freeze_count()
    assert mine > 0
    seen, _ = _frozen_during_run(llm)
    # Nothing unfrozen by the run (the count only drops as frozen objects are freed) nor frozen by it.
    assert all(mine // 2 < count <= mine for count in seen)
    assert mine // 2 < gc.get_freeze_count() <= mine
    gc.unfreeze()
    gc.disable()
    try:
        seen, _ = _frozen_during_run(llm)
        assert set(seen) == {0} and not gc.isenabled()
    finally:
        gc.enable()


def test_frozen_heap_yields_whether_it_froze(clean_gc) -> None:
    with frozen_heap(True) as froze:
        assert froze and gc.get_freeze_count() > 0
        with frozen_heap(True) as inner:      # nested (another run's thread): left to the outer one
            assert not inner
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    with frozen_heap(False) as froze:
        assert not froze and gc.get_freeze_count() == 0


def test_a_dropped_engine_is_collected_after_its_runs(clean_gc, tiny_checkpoint) -> None:
    import weakref

    llm = _llm(tiny_checkpoint)
    llm.generate(PROMPTS, PARAMS)
    ref = weakref.ref(llm.engine)
    del llm
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_a_bad_freeze_heap_names_the_field(tiny_checkpoint, value) -> None:
    with pytest.raises(ValueError, match="freeze_heap"):
        _llm(tiny_checkpoint, freeze_heap=value)
