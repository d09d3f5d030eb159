# Session 18, call 3 (right after call 2): the drafter of call 2, session 17's fixes (profile
# warm-up, declined steps drop the buffer, expected_loss latch) and session 18's dormant
# stretches (`DormantSteps`: a pause with the features declined asks the proposer nothing per
# step). Profiles first, then none, none-again, confidence and fixed-7 at 1-256 requests, 5
# paired rounds, step times and the step log (with each call's wall time: `outside`).
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 590 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 32 64 128 256 --fixed 7 \
  --variants none none-again confidence fixed-7 --interleave 5 \
  --kv-cache-gib 8 --step-times --step-log $OUT/steps.jsonl --sps-method steps --save-sps $OUT/sps.json \
  --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
cp $OUT/sps.json $OUT/spec_sps.json ~/ 2>/dev/null
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ |profile|rror|Trace" $OUT/bench_paired.log | grep -v "step times" | cut -c1-300 | tail -60
