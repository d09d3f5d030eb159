# Session 13, call 5 (fresh machine, random weights): draft and context-projection graphs
# captured at start-up (`capture_all`) and the context pool reserved for the batch, checked on
# CUDA: the graph tests, the start-up cost (`startup_cost.py`), then step times tagged
# +capture / +eager / +flush with two drafters: one trained 1 step (it almost never pays:
# confidence scheduling should track plain decoding, its probes now free of first-use costs) and
# one trained 15 s on the random target's repetitive output (accepts nearly every draft).
source tools/gpu_env.sh >/dev/null 2>&1
timeout 120 python3 -m pytest -q -rf --tb=short -p no:cacheprovider -n 4 packages/deepinfer-dspark/tests/test_draft_graph.py \
  packages/deepinfer-dspark/tests/test_observe_graph.py packages/deepinfer-dspark/tests/test_engine_proposers.py > $OUT/tests.log 2>&1
tail -3 $OUT/tests.log
export PYTHONPATH=$PYTHONPATH:$PWD/packages/deepinfer-core/benchmarks
T=$(python3 -c "from pathlib import Path; from structured_overhead import random_checkpoint; print(random_checkpoint(Path('.cache/smol_tok')))")
timeout 60 deepinfer-dspark train --target $T --out ~/drafter_rand --num-prompts 64 --max-new-tokens 32 \
  --num-calibration-prompts 8 --batch-size 16 --steps 40 --max-train-seconds 15 > $OUT/train.log 2>&1
timeout 50 deepinfer-dspark train --target $T --out ~/drafter_weak --num-prompts 16 --max-new-tokens 16 \
  --num-calibration-prompts 8 --batch-size 16 --steps 1 --max-train-seconds 5 > $OUT/train_weak.log 2>&1
tail -1 $OUT/train.log | cut -c1-160; tail -1 $OUT/train_weak.log | cut -c1-160
timeout 80 python3 packages/deepinfer-dspark/benchmarks/startup_cost.py --target $T --drafter ~/drafter_rand \
  --max-num-seqs 256 --max-model-len 2048 --kv-cache-gib 8 > $OUT/startup.md 2>&1
tail -6 $OUT/startup.md
B=packages/deepinfer-dspark/benchmarks/bench_dspark.py
timeout 140 python3 $B --target $T --drafter ~/drafter_weak --max-tokens 128 --concurrency 1 2 8 --fixed 3 7 \
  --variants none none-again confidence fixed-3 --interleave 3 --sps-sizes 1 2 8 --sps-repeats 1 --sps-method steps \
  --step-times --kv-cache-gib 4 --out $OUT/weak.md > $OUT/bench_weak.log 2>&1
grep -E "^[0-9]+ |rror|Trace" $OUT/bench_weak.log | cut -c1-330
timeout 90 python3 $B --target $T --drafter ~/drafter_rand --max-tokens 64 --concurrency 1 8 --fixed 3 7 \
  --variants none none-again confidence fixed-3 --interleave 2 --sps-sizes 1 8 --sps-repeats 1 --sps-method steps \
  --step-times --kv-cache-gib 4 --out $OUT/rand.md > $OUT/bench_rand.log 2>&1
grep -E "^[0-9]+ |rror|Trace" $OUT/bench_rand.log | cut -c1-330
