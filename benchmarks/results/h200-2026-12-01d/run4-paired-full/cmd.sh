# Session 19, call 4 (right after call 3): the drafter of call 2 and session 18's profiles; none,
# none-again, confidence, confidence-full (prefix_pricing "full_round"), fixed-3 and fixed-7 at
# 1, 2 and 8 requests, 9 paired rounds, the step log.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
timeout 500 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 3 7 --sps $P/sps.json --spec-sps $P/spec_sps.json \
  --variants none none-again confidence confidence-full fixed-3 fixed-7 --interleave 9 \
  --kv-cache-gib 8 --step-log $OUT/steps.jsonl \
  --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ |profile|rror|Trace" $OUT/bench_paired.log | grep -v "step times" | cut -c1-300 | tail -40
