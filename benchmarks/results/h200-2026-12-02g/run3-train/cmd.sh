# Session 30, call 3: the GGUF joined, then the drafter trained as in session 29's call 3 but on
# 5,200 docstring prompts instead of 4,096 (the machine's Python 3.12 finds 5,353) (that drafter ran ~32 epochs: training-set acceptance
# 0.76 against 2.13 of 7 held out), 330 s, calibrated on held-out replies.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ac
ls ~/gguf/part_aa ~/gguf/part_ab || exit 3
cp .cache/gguf/part_ac ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_* > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 580 deepinfer-dspark train --target $T --out $HOME/drafter_real --num-prompts 5200 --batch-size 64 \
  --steps 20000 --max-train-seconds 330 > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"
grep " step " $OUT/train.log | awk 'NR % 10 == 1' | tail -4; grep -v " step " $OUT/train.log | tail -5
cp ~/drafter_real/training.json ~/drafter_real/calibration.json $OUT/ 2>/dev/null
