# Session 29, call 3 (issued right after call 2; as session 28 call 2): the GGUF joined, then the
# drafter trained as in session 21 (4,096 docstring prompts, 64 sequences a step, TargetCache),
# 330 s, calibrated on held-out replies.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ac
ls ~/gguf/part_aa ~/gguf/part_ab || exit 3
cp .cache/gguf/part_ac ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_* > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 560 deepinfer-dspark train --target $T --out $HOME/drafter_real --num-prompts 4096 --batch-size 64 \
  --steps 20000 --max-train-seconds 330 > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"
grep " step " $OUT/train.log | awk 'NR % 10 == 1' | tail -4; grep -v " step " $OUT/train.log | tail -5
cp ~/drafter_real/training.json ~/drafter_real/calibration.json $OUT/ 2>/dev/null
