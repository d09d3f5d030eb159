# Session 7, call 4 (issued right after call 3, whose machine holds the GGUF's first half): the
# SmolLM2-135M-Instruct GGUF joined, a drafter trained on it (200 s cap), then no speculation,
# fixed k = 1 and 3 and confidence scheduling by concurrency, with the draft round in CUDA graphs.
ls ~/gguf/part_aa || exit 3
cp .cache/gguf/part_ab ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_* > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 290 deepinfer-dspark train --target $T --out ~/drafter_real --num-prompts 2048 --max-train-seconds 200 > $OUT/train.log 2>&1; tail -3 $OUT/train.log
cp ~/drafter_real/training.json ~/drafter_real/calibration.json $OUT/ 2>/dev/null
timeout 255 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 \
  --concurrency 1 8 32 64 128 256 --fixed 1 3 --variants none confidence fixed-1 fixed-3 --budget 190 \
  --save-sps $OUT/sps.json --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | tail -30
