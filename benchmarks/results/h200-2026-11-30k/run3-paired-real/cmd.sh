# Session 14, call 3 (right after call 2): SmolLM2-135M-Instruct with the drafter of call 2 and
# session 13's code (every draft and context-projection graph captured at engine start-up; each
# SPS profile measured in its own child process; the paused buffer emptied when its requests end).
# Three profiles first (plain, k = 7, k = 1; --sps-method steps), then none, none-again (the noise
# floor), confidence and fixed-3 alive at once (8 GiB of KV cache each), 5 paired rounds per
# concurrency, with step times.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 540 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 64 128 256 --fixed 3 7 \
  --variants none none-again confidence fixed-3 --interleave 5 \
  --kv-cache-gib 8 --step-times --sps-method steps --save-sps $OUT/sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
cp $OUT/sps.json $OUT/spec_sps.json $OUT/spec_k1_sps.json ~/ 2>/dev/null
grep -E "^[0-9]+ |profile|rror|Trace" $OUT/bench_paired.log | cut -c1-300 | tail -60
