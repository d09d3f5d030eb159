# Session 33, call 7 (call 3 again): the GGUF joined; the drafter trained as in session 31's call 3 (5,200 prompts, 330 s; session 32:
# held-out 2.34-2.40 of 7). Session 31 already recorded the H200's replies (h200-2026-12-02h/run3-replies-train).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ac
ls ~/gguf/part_aa ~/gguf/part_ab || exit 3
cp .cache/gguf/part_ac ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_a? > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
ls -la ~/.cache/deepinfer/models/
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 470 deepinfer-dspark train --target $T --out $HOME/drafter_real --num-prompts 5200 --batch-size 64 \
  --steps 20000 --max-train-seconds 330 > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"
grep " step " $OUT/train.log | awk 'NR % 10 == 1' | tail -4; grep -v " step " $OUT/train.log | tail -5
cp ~/drafter_real/training.json ~/drafter_real/calibration.json $OUT/ 2>/dev/null
