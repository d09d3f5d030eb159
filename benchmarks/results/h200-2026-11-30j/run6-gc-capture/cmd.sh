# Session 13, call 6 (fresh machine, random weights): the graph tests on CUDA after pausing
# Python's garbage collector during captures (call 5: a collection mid-capture freed an earlier
# engine's graph and invalidated the capture), a negative control (the same test with
# gc.disable made a no-op: it must fail), then the weak drafter's flushes at 1 request.
source tools/gpu_env.sh >/dev/null 2>&1
timeout 150 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -n 4 packages/deepinfer-dspark/tests/test_draft_graph.py \
  packages/deepinfer-dspark/tests/test_observe_graph.py packages/deepinfer-dspark/tests/test_engine_proposers.py \
  packages/deepinfer-core/tests/test_verify_graph.py packages/deepinfer-core/tests/test_runner_cuda_graph_padding.py \
  packages/deepinfer-core/tests/test_spec_engine.py > $OUT/tests.log 2>&1
tail -3 $OUT/tests.log
timeout 60 python3 -c "import gc, sys, pytest; gc.disable = lambda: None; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--tb=line', 'packages/deepinfer-dspark/tests/test_draft_graph.py', '-k', 'survive']))" > $OUT/negative.log 2>&1
echo "negative control exit $? (1 = the test failed without the fix, as it must)"; grep -E "passed|failed" $OUT/negative.log | tail -1
export PYTHONPATH=$PYTHONPATH:$PWD/packages/deepinfer-core/benchmarks
T=$(python3 -c "from pathlib import Path; from structured_overhead import random_checkpoint; print(random_checkpoint(Path('.cache/smol_tok')))")
timeout 50 deepinfer-dspark train --target $T --out ~/drafter_weak --num-prompts 16 --max-new-tokens 16 \
  --num-calibration-prompts 8 --batch-size 16 --steps 1 --max-train-seconds 5 > $OUT/train_weak.log 2>&1
timeout 100 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_weak --max-tokens 128 \
  --concurrency 1 --fixed 3 7 --variants none none-again confidence --interleave 5 --sps-sizes 1 --sps-repeats 1 \
  --sps-method steps --step-times --kv-cache-gib 4 --out $OUT/weak.md > $OUT/bench_weak.log 2>&1
grep -E "^[0-9]+ |rror|Trace" $OUT/bench_weak.log | cut -c1-330
