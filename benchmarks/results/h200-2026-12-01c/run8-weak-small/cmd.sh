# Session 18, call 8 (right after call 7): call 7 again at 1, 2 and 8 requests with 9 paired rounds (the machine was noisy): the weak drafter of call 6 with call 3's profiles (the
# same drafter architecture, so the same round costs): none, none-again and confidence at 1-256
# requests, 5 paired rounds, step times and the step log. Confidence should run as none does,
# mostly in dormant stretches.
ls ~/drafter_weak/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
timeout 200 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_weak \
  --max-tokens 128 --concurrency 1 2 8 --fixed 7 --sps $P/sps.json --spec-sps $P/spec_sps.json \
  --variants none none-again confidence --interleave 9 \
  --kv-cache-gib 8 --step-times --step-log $OUT/steps.jsonl \
  --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ |profile|rror|Trace" $OUT/bench_paired.log | grep -v "step times" | cut -c1-300 | tail -30
