# Session 22, call 4 (right after call 3, same drafter): fresh profiles at 1-256 requests, then
# the table at 32, 64, 128 and 256 requests: none, none-again, confidence, fixed-3, fixed-4 and
# fixed-7, 3 paired rounds.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 590 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 32 64 128 256 --fixed 3 4 7 --sps-method steps --save-sps $OUT/sps.json \
  --variants none none-again confidence fixed-3 fixed-4 fixed-7 --interleave 3 --kv-cache-gib 8 \
  --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "bench rc $? at ${SECONDS} s"
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
