# Session 21, call 2 (issued right after call 1): the GGUF joined, then the drafter trained as in
# sessions 8-20 (4,096 docstring prompts, 64 sequences a step, 370 s), calibrated on held-out
# replies; the target's features now cached once per sequence (TargetCache, new on the H200):
# if that run fails early (before 150 s), it is run again without the cache, 300 s.
# Carry: .cache/gpu_wheels .cache/gguf/part_ab
ls ~/gguf/part_aa || exit 3
cp .cache/gguf/part_ab ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_* > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
ARGS="--target $T --out $HOME/drafter_real --num-prompts 4096 --batch-size 64 --steps 20000 --max-train-seconds 370"
timeout 570 deepinfer-dspark train $ARGS > $OUT/train.log 2>&1
RC=$?; echo "train rc $RC at ${SECONDS} s"
if [ $RC -ne 0 ] && [ $SECONDS -lt 150 ]; then
  tail -5 $OUT/train.log; mv $OUT/train.log $OUT/train_failed.log
  timeout $((585 - SECONDS)) deepinfer-dspark train $ARGS --max-train-seconds 300 --no-target-cache > $OUT/train.log 2>&1
  echo "train (no cache) rc $? at ${SECONDS} s"
fi
grep " step " $OUT/train.log | awk 'NR % 10 == 1' | tail -4; grep -v " step " $OUT/train.log | tail -5
cp ~/drafter_real/training.json ~/drafter_real/calibration.json $OUT/ 2>/dev/null
