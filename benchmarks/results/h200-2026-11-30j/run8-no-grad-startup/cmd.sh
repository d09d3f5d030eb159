# Session 13, call 8 (fresh machine, random weights, the session's last ~4 minutes): after the
# review fixes (capture_all under no_grad: run 5's captures kept autograd history in the graph
# pool; the pool reserved from the KV cache's tokens), the graph tests on CUDA and the start-up
# cost again.
source tools/gpu_env.sh >/dev/null 2>&1
timeout 40 python3 -m pytest -q -rf --tb=short -p no:cacheprovider packages/deepinfer-dspark/tests/test_draft_graph.py \
  packages/deepinfer-dspark/tests/test_context_pool.py > $OUT/tests.log 2>&1
tail -1 $OUT/tests.log
export PYTHONPATH=$PYTHONPATH:$PWD/packages/deepinfer-core/benchmarks
T=$(python3 -c "from pathlib import Path; from structured_overhead import random_checkpoint; print(random_checkpoint(Path('.cache/smol_tok')))")
timeout 40 deepinfer-dspark train --target $T --out ~/drafter_weak --num-prompts 16 --max-new-tokens 16 \
  --num-calibration-prompts 8 --batch-size 16 --steps 1 --max-train-seconds 5 > $OUT/train_weak.log 2>&1
timeout 50 python3 packages/deepinfer-dspark/benchmarks/startup_cost.py --target $T --drafter ~/drafter_weak \
  --max-num-seqs 256 --max-model-len 2048 --kv-cache-gib 8 > $OUT/startup.md 2>&1
tail -6 $OUT/startup.md
