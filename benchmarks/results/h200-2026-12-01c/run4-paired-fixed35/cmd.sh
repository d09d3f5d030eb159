# Session 18, call 4 (right after call 3): the same drafter and call 3's profiles; none,
# none-again, confidence, fixed-3 and fixed-5 at 1-256 requests (fixed-7 ran in call 3), 5 paired
# rounds, step times and the step log.
ls ~/drafter_real/config.json ~/sps.json ~/spec_sps.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 480 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 32 64 128 256 --fixed 3 5 7 --sps ~/sps.json --spec-sps ~/spec_sps.json \
  --variants none none-again confidence fixed-3 fixed-5 --interleave 5 \
  --kv-cache-gib 8 --step-times --step-log $OUT/steps.jsonl \
  --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ |profile|rror|Trace" $OUT/bench_paired.log | grep -v "step times" | cut -c1-300 | tail -40
