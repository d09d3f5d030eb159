# Session 37, call 1: the first third of the SmolLM2 GGUF onto the machine (calls 2 and 3 carry the others), the
# packages installed once, and a drafter training step timed with a sequence's blocks run side by side in one
# attention call (`grouped_blocks`, new) against one copy of the context per block (`--per-block`, as before),
# on a random-weight SmolLM2-135M-shaped target (config carried in .cache/smollm2_shape; weights drawn here).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_aa .cache/smollm2_shape
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/ && ls -la ~/gguf
source tools/gpu_env.sh > $OUT/env.log 2>&1; echo "env rc $? at ${SECONDS} s"; tail -3 $OUT/env.log
export PYTHONUNBUFFERED=1
rm -rf ~/shape && cp -r .cache/smollm2_shape ~/shape && python3 packages/deepinfer-dspark/benchmarks/random_target.py ~/shape
for mode in grouped per-block; do
  flag=""; [ $mode = per-block ] && flag="--per-block"
  timeout 120 python3 packages/deepinfer-dspark/benchmarks/train_step_profile.py --target ~/shape $flag \
    > $OUT/train_profile_$mode.txt 2>&1
  echo "$mode rc $? at ${SECONDS} s"
  grep -v Warn $OUT/train_profile_$mode.txt | head -10
done
grep -iE "error|Trace" $OUT/train_profile_*.txt | head -10
