# Session 21, call 4 (right after call 3): the same table at 64, 128 and 256 requests, 3 paired
# rounds (fixed k runs at a third of plain decoding or less there: session 14).
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
timeout 420 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 64 128 256 --fixed 1 2 3 4 5 6 7 --sps $P/sps.json --spec-sps $P/spec_sps.json \
  --variants none none-again confidence fixed-1 fixed-2 fixed-3 fixed-4 fixed-5 fixed-6 fixed-7 --interleave 3 \
  --kv-cache-gib 8 --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "bench rc $? at ${SECONDS} s"
grep -E "^[0-9]+ " $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
