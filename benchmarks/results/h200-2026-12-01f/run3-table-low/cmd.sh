# Session 21, call 3 (right after call 2): the issue's table at 1, 8 and 32 requests on call 2's
# drafter and session 18's profiles: none, none-again, confidence and fixed k = 1..7, all ten
# engines alive, 7 paired rounds, the step log. The code: session 20's fixes (dormant gapped
# batches; openings that no longer shield a ruled-out load) and session 21's (a loss implied by a
# spread priced as settled).
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
timeout 430 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 --fixed 1 2 3 4 5 6 7 --sps $P/sps.json --spec-sps $P/spec_sps.json \
  --variants none none-again confidence fixed-1 fixed-2 fixed-3 fixed-4 fixed-5 fixed-6 fixed-7 --interleave 7 \
  --kv-cache-gib 8 --step-log $OUT/steps.jsonl \
  --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "bench rc $? at ${SECONDS} s"
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ " $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
