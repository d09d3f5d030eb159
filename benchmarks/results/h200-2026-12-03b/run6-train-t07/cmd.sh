# Session 33, call 6 (if the budget allows): the drafter trained as in call 3 (and session 32) but on replies sampled at
# temperature 0.7 (gpu_plan 0a3), held-out replies still greedy (--calibration-temperature 0, the default),
# so its held-out acceptance compares with call 3's.
ls ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 470 deepinfer-dspark train --target $T --out $HOME/drafter_t07 --num-prompts 5200 --batch-size 64 \
  --steps 20000 --max-train-seconds 330 --temperature 0.7 > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"
grep " step " $OUT/train.log | awk 'NR % 10 == 1' | tail -4; grep -v " step " $OUT/train.log | tail -5
cp ~/drafter_t07/training.json ~/drafter_t07/calibration.json $OUT/ 2>/dev/null
