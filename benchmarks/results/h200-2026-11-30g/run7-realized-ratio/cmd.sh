# Session 10, call 7 (right after call 6): the realized acceptance ratio (AcceptanceRatio) and the
# cheaper paused step on the real model. The GGUF joined; a drafter trained for 220 s (4,096
# docstring prompts, 64 sequences a step); both profiles measured on chat prompts; then no
# speculation, confidence and fixed-7 alive at once, 3 paired rounds at 1-256 requests.
ls ~/gguf/part_aa || exit 3
cp .cache/gguf/part_ab ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_* > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 380 deepinfer-dspark train --target $T --out ~/drafter_real --num-prompts 4096 --batch-size 64 --steps 20000 \
  --max-train-seconds 220 > $OUT/train.log 2>&1
grep -v " step " $OUT/train.log | tail -2
cp ~/drafter_real/calibration.json $OUT/ 2>/dev/null
timeout 190 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 64 128 256 --fixed 7 \
  --variants none confidence fixed-7 --interleave 3 \
  --kv-cache-gib 8 --save-sps $OUT/sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
grep -v "^|" $OUT/bench_paired.log | grep -v "USDT\|_warn" | tail -24 | cut -c1-150
