# Session 9, call 6 (right after call 5): the per-bucket pause ledger (PauseLedger) on the real
# model with a quick drafter (1,024 prompts, 100 s of training: weaker than call 2's), profiles
# measured on chat prompts, then no speculation / confidence / confidence-measured / fixed-3 /
# fixed-7 interleaved (3 paired rounds) at 1-256 requests.
ls ~/gguf/part_aa || exit 3
cp .cache/gguf/part_ab ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_* > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 200 deepinfer-dspark train --target $T --out ~/drafter_quick --num-prompts 1024 --batch-size 64 --steps 20000 \
  --max-train-seconds 100 > $OUT/train.log 2>&1
grep -v " step " $OUT/train.log | tail -3
timeout 280 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_quick \
  --max-tokens 128 --concurrency 1 8 32 64 128 256 --fixed 3 7 \
  --variants none confidence confidence-measured fixed-3 fixed-7 --interleave 3 \
  --kv-cache-gib 8 --save-sps $OUT/sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
grep -v "^|" $OUT/bench_paired.log | grep -v "USDT\|_warn" | tail -32 | cut -c1-150
