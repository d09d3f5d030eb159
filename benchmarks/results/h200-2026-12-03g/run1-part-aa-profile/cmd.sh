# Session 38, call 1: the GGUF's first third, the packages installed, a drafter training step timed (grouped
# attention; the batch is now padded with one gather, session 37: expect its "batch" phase well under 7.1 ms),
# and one flush of 8 requests' buffered features at ~500 / 600 / 1,000 rows (session 36: flushes of more than
# 512 buffered (request, step) pairs cost 10-31 ms in the engine).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_aa .cache/smollm2_shape
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/ && ls -la ~/gguf
source tools/gpu_env.sh > $OUT/env.log 2>&1; echo "env rc $? at ${SECONDS} s"; tail -3 $OUT/env.log
export PYTHONUNBUFFERED=1
rm -rf ~/shape && cp -r .cache/smollm2_shape ~/shape && python3 packages/deepinfer-dspark/benchmarks/random_target.py ~/shape
timeout 120 python3 packages/deepinfer-dspark/benchmarks/train_step_profile.py --target ~/shape \
  > $OUT/train_profile_grouped.txt 2>&1
echo "profile rc $? at ${SECONDS} s"; grep -v Warn $OUT/train_profile_grouped.txt | head -12
for steps in 62 75 125; do
  timeout 60 python3 packages/deepinfer-dspark/benchmarks/flush_cost.py \
    --config packages/deepinfer-dspark/benchmarks/smollm2_drafter/config.json --device cuda \
    --requests 8 --prompt 1 --steps $steps --finish-at 1000 --repeats 5 --paths graphs eager >> $OUT/flush_cost.log 2>&1
  echo "flush $steps rc $? at ${SECONDS} s"
done
grep -E "requests|rror" $OUT/flush_cost.log
