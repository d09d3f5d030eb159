# Session 12, call 3 (right after call 2): SmolLM2-135M-Instruct with the drafter of call 2 and
# session 11's code (probe_pause, cheaper PendingContext.take, the capture gate). Both profiles
# measured first on chat prompts (128 tokens, EOS ignored; median of 3 batches a size); then no
# speculation, a second plain engine (none-again: the noise floor of the paired ratios),
# confidence and fixed-7 alive at once (8 GiB of KV cache each), 5 paired rounds per concurrency.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 570 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 64 128 256 --fixed 7 \
  --variants none none-again confidence fixed-7 --interleave 5 \
  --kv-cache-gib 8 --save-sps $OUT/sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
cp $OUT/sps.json $OUT/spec_sps.json ~/ 2>/dev/null
grep -v "^|" $OUT/bench_paired.log | grep -v "USDT\|_warn" | grep -E "^[0-9]+ |rror|Trace" | tail -30 | cut -c1-400
cat $OUT/dspark_paired.md | tail -26
