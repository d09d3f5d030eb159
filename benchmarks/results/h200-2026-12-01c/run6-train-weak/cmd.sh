# Session 18, call 6 (right after call 5): the GGUF joined, then a weak drafter (1,024 prompts,
# 60 s of training): drafting pays nowhere with it, the case where confidence scheduling must
# run as plain decoding does.
ls ~/gguf/part_aa || exit 3
cp .cache/gguf/part_ab ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_* > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 300 deepinfer-dspark train --target $T --out ~/drafter_weak --num-prompts 1024 --batch-size 64 --steps 20000 \
  --max-train-seconds 60 > $OUT/train.log 2>&1
grep -v " step " $OUT/train.log | tail -4
cp ~/drafter_weak/training.json ~/drafter_weak/calibration.json $OUT/ 2>/dev/null
