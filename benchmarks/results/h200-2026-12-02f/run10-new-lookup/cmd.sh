# Session 29, call 10: the GGUF joined, a drafter trained for seconds (64 prompts; it loses, so
# confidence scheduling pauses nearly everywhere and prompt lookup is what is left), then the
# closed loop at 1 / 2 requests, 8 prompt sets: none / confidence-lookup (now prompt_lookup_min 2,
# searched every step, syncs priced 0.45: lookup_replay.py) / ngram-7. Calls 5 and 7 measured the
# old settings (n = 4, every 8 tokens, 0.9) at 1.13 / 1.09 (1 request) and 1.10 / 1.05 (2), ngram-7
# 1.22 / 1.17 and 1.05 / 1.10 beside them.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ac
ls ~/gguf/part_aa ~/gguf/part_ab || exit 3
cp .cache/gguf/part_ac ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_* > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
timeout 100 deepinfer-dspark train --target $T --out $HOME/drafter_quick --num-prompts 64 --max-new-tokens 64 \
  --steps 30 --num-calibration-prompts 16 > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"; tail -2 $OUT/train.log
timeout $((330 - SECONDS)) python3 $B/bench_dspark.py --target $T --drafter ~/drafter_quick \
  --max-tokens 128 --concurrency 1 2 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 \
  --sps-warmup 2 --prompt-sets 8 --closed-loop 4 --save-sps $OUT/sps.json \
  --variants none confidence-lookup ngram-7 --interleave 8 \
  --kv-cache-gib 8 --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
grep -E "^[0-9]+ " $OUT/bench_paired.log | cut -c1-330
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
