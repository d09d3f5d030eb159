# Session 12, call 7 (fresh machine, random weights only): the packed host-to-device copy of
# `prepare_inputs` (one pinned copy per dtype instead of seven) on CUDA. The engine's CUDA tests
# that run it (batch invariance, draft/observe graphs, the DSpark engine tests with the new
# sps_profile_k1), then `prepare_inputs_cost.py` against the previous batch.py
# (batch_before.py: `git show 34d7ec5:packages/deepinfer-core/src/deepinfer_core/executor/batch.py`, copied there for the call, not committed) in the same run.
source tools/gpu_env.sh > /dev/null 2>&1
timeout 300 python3 -m pytest -q -x -n 4 -rf --tb=short packages/deepinfer-core/tests/test_batch_invariance.py \
  packages/deepinfer-dspark/tests/test_draft_graph.py packages/deepinfer-dspark/tests/test_observe_graph.py \
  packages/deepinfer-dspark/tests/test_engine_proposers.py packages/deepinfer-dspark/tests/test_verify_rates.py \
  > $OUT/tests.log 2>&1; tail -5 $OUT/tests.log
timeout 120 python3 packages/deepinfer-core/benchmarks/prepare_inputs_cost.py --device cuda \
  --baseline benchmarks/results/h200-2026-11-30i/run7-prepare/batch_before.py > $OUT/prepare.md 2>&1; cat $OUT/prepare.md
