# Session 11, call 3 (right after call 2): SmolLM2-135M-Instruct with the drafter of call 2 and
# session 10's pause policy (AcceptanceRatio bound, FullAcceptance + expected_loss). Both profiles
# measured first on chat prompts (128 tokens, EOS ignored); then no speculation, confidence and
# fixed-7 alive at once (8 GiB of KV cache each), 3 paired rounds per concurrency. Then one engine
# at a time (none, confidence, fixed-3, fixed-7) on the saved profiles with a cProfile and a
# torch.profiler table at 8 requests (what the probe rounds cost).
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 260 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 64 128 256 --fixed 7 \
  --variants none confidence fixed-7 --interleave 3 \
  --kv-cache-gib 8 --save-sps $OUT/sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
cp $OUT/sps.json $OUT/spec_sps.json ~/ 2>/dev/null
grep -v "^|" $OUT/bench_paired.log | grep -v "USDT\|_warn" | grep -E "^[0-9]+ confidence|rror|Trace" | tail -8 | cut -c1-160
timeout 270 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 64 128 256 --fixed 3 7 --variants none confidence fixed-3 fixed-7 \
  --sps ~/sps.json --spec-sps ~/spec_sps.json --profile $OUT/profile.txt --torch-profile $OUT/torch_profile.txt \
  --profile-at 8 --budget 200 --out $OUT/dspark.md > $OUT/bench.log 2>&1
cat $OUT/dspark_paired.md | tail -20; cat $OUT/dspark.md | tail -26
