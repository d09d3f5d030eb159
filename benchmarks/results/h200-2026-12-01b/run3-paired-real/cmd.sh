# Session 17, call 3 (right after call 2): SmolLM2-135M-Instruct with the drafter of call 2 and
# the code after session 16's call 7 (`_regret_gaps`, partial rounds judged as settled losses,
# `confidence` without the k = 1 profile). Profiles first, then none, none-again, confidence,
# fixed-3 and fixed-7 at 1-256 requests, 5 paired rounds, step times and the step log.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 580 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 64 128 256 --fixed 3 5 7 \
  --variants none none-again confidence fixed-3 fixed-7 --interleave 5 \
  --kv-cache-gib 8 --step-times --step-log $OUT/steps.jsonl --sps-method steps --save-sps $OUT/sps.json \
  --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
cp $OUT/sps.json $OUT/spec_sps.json ~/ 2>/dev/null
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ |profile|rror|Trace" $OUT/bench_paired.log | grep -v "step times" | cut -c1-300 | tail -60
