# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`EngineConfig.freeze_heap`: during an `LLM.generate` / `LLM.chat` call the objects alive at its
start are frozen out of the garbage collector's passes, and only then; a process that froze
objects itself, or disabled the collector, is left alone; the outputs do not change; cycles the
caller drops between calls are still collected (`FrozenHeap.debt`), without a `gc.collect()`."""

from __future__ import annotations

import gc

import pytest

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.engine.frozen_heap import FrozenHeap

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


def _frozen_during_run(llm: LLM, run=None) -> tuple[list[int], list[list[int]]]:
    """`gc.get_freeze_count()` at every step of `run(llm)` (default: `generate` of PROMPTS), and the
    outputs' tokens."""
    seen: list[int] = []
    step = llm.engine.step

    def counted():
        seen.append(gc.get_freeze_count())
        return step()
    llm.engine.step = counted
    try:
        outs = run(llm) if run is not None else llm.generate(PROMPTS, PARAMS)
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
    try:
        with pytest.raises(RuntimeError, match="boom"):
            llm.generate(PROMPTS, PARAMS)
    finally:
        llm.engine.step = step
    assert gc.get_freeze_count() == 0
    outs = llm.generate(PROMPTS, PARAMS)   # the engine runs on after the failed call
    assert all(o.error is None and len(o.outputs[0].token_ids) == 6 for o in outs)


def test_chat_freezes_the_heap_too(clean_gc, tiny_checkpoint) -> None:
    llm = LLM(str(tiny_checkpoint("llama")), dtype="float32", max_model_len=128, block_size=4,
              kv_cache_memory=8 << 20, seed=3)
    seen, _ = _frozen_during_run(llm, lambda engine: engine.chat([{"role": "user", "content": "hi"}], PARAMS))
    assert seen and min(seen) > 0 and gc.get_freeze_count() == 0


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
    with FrozenHeap().call() as froze:
        assert froze and gc.get_freeze_count() > 0
        with FrozenHeap().call() as inner:   # nested (another engine's call in a thread): left to the outer one
            assert not inner
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    with FrozenHeap(enabled=False).call() as froze:
        assert not froze and gc.get_freeze_count() == 0
    with pytest.raises(ValueError, match="collect_every"):
        FrozenHeap(collect_every=0)
    for bad in (-1.0, float("nan"), "10"):
        with pytest.raises(ValueError, match="collect_after_s"):
            FrozenHeap(collect_after_s=bad)


def test_full_passes_run_frozen_end_in_a_real_collection(clean_gc) -> None:
    """Every `collect_every` full passes run with the heap frozen, a call ends with `gc.collect()`:
    a cycle alive when the calls started and dropped since is collected then."""
    import weakref

    class Node:
        pass

    heap = FrozenHeap(collect_every=2, clock=lambda: 0.0)   # (the clock never calls for one)
    node = Node()
    node.self = node                       # a cycle, alive when the first call starts
    ref = weakref.ref(node)
    with heap.call():
        del node                           # garbage now, but frozen: no pass in the call finds it
        gc.collect()                       # a full pass, shortened: the debt grows to 1
    assert ref() is not None and heap.debt == 1 and heap.collections == 0
    with heap.call():
        gc.collect()                       # the second: the call ends with a real collection
    assert ref() is None and heap.debt == 0 and heap.collections == 1


def test_cycles_dropped_between_calls_do_not_pile_up(clean_gc, tiny_checkpoint) -> None:
    """A caller that drops a cycle between calls and never calls `gc.collect()`: after many calls
    most of the cycles are gone, by the real collections every `collect_after_s` (small calls meet
    no full pass; without those collections all 80 stayed: each was frozen at the next call's
    start and in the oldest generation after it)."""
    import weakref

    class Blob:
        def __init__(self) -> None:
            self.self = self
            self.payload = [object() for _ in range(200)]

    llm = _llm(tiny_checkpoint)
    ticks = iter(range(1_000_000))
    llm._heap = FrozenHeap(collect_after_s=10.0, clock=lambda: float(next(ticks)))   # a second a read
    refs = []
    for _ in range(80):
        blob = Blob()
        refs.append(weakref.ref(blob))
        llm.generate(PROMPTS, PARAMS)
        del blob
    alive = sum(r() is not None for r in refs)
    assert llm._heap.collections >= 1
    assert alive < 40, alive


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_a_bad_freeze_heap_names_the_field(tiny_checkpoint, value) -> None:
    with pytest.raises(ValueError, match="freeze_heap"):
        _llm(tiny_checkpoint, freeze_heap=value)
