# Session 10, call 3 (right after call 2): SmolLM2-135M-Instruct with the drafter of call 2, session
# 9's round_rate and refined PauseLedger. Both profiles measured first on chat prompts (another
# shuffle, 128 tokens, EOS ignored); then four engines alive at once (no speculation, confidence,
# confidence with measured step times, fixed-7; 8 GiB of KV cache each), 3 rounds per concurrency,
# the order rotated each round: paired ratios to no speculation.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 560 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 64 128 256 --fixed 7 \
  --variants none confidence confidence-measured fixed-7 --interleave 3 \
  --kv-cache-gib 8 --save-sps $OUT/sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
cp $OUT/sps.json $OUT/spec_sps.json ~/ 2>/dev/null
grep -v "^|" $OUT/bench_paired.log | grep -v "USDT\|_warn" | tail -40 | cut -c1-150
