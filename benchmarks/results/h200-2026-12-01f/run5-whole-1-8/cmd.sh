# Session 21, call 5 (right after call 4, the lease's time left): confidence against confidence-whole (opening_tokens 0, no opening phase) at 1 and 8 requests, next to none, none-again, fixed-4 and fixed-7, 9 paired rounds, the step log: call 3 ran confidence at 0.913 at 8 requests with drafted rounds.
# (issued inline; this is its command)
source tools/gpu_env.sh >/dev/null 2>&1; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
timeout 300 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 \
  --concurrency 1 8 --fixed 4 7 --sps $P/sps.json --spec-sps $P/spec_sps.json \
  --variants none none-again confidence confidence-whole fixed-4 fixed-7 --interleave 9 --kv-cache-gib 8 \
  --step-log $OUT/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1; echo "bench rc $? at ${SECONDS} s"
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ " $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
