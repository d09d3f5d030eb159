# Session 37, call 3: the GGUF joined; the drafter trained as in sessions 31-34 (5,200 prompts, 330 s, batch 64, 32
# anchors; held-out 2.23-2.40 of 7) with the new grouped attention (call 1: 69.9 ms a step against 167.2, so about
# 2.4x the steps in the same time). The drafter comes back as a bf16 tar (no embedding / LM head) in 15 MiB parts.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ac
ls ~/gguf/part_aa ~/gguf/part_ab || exit 3
cp .cache/gguf/part_ac ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_a? > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 520 deepinfer-dspark train --target $T --out $HOME/drafter_real --num-prompts 5200 --batch-size 64 \
  --steps 20000 --max-train-seconds 330 > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"
grep " step " $OUT/train.log | awk 'NR % 10 == 1' | tail -4; grep -v " step " $OUT/train.log | tail -5
cp ~/drafter_real/training.json ~/drafter_real/calibration.json $OUT/ 2>/dev/null
S=~/stash/drafter_bf16; rm -rf ~/stash; mkdir -p $S ~/stash/parts
python3 - <<'PY'
import os, torch
from safetensors.torch import load_file, save_file
src, dst = os.path.expanduser("~/drafter_real"), os.path.expanduser("~/stash/drafter_bf16")
state = {k: v.to(torch.bfloat16).contiguous() for k, v in load_file(f"{src}/model.safetensors").items()
         if k not in ("embed_tokens.weight", "lm_head.weight")}
save_file(state, f"{dst}/model.safetensors", metadata={"format": "pt"})
print("stash tensors", len(state), "params", sum(t.numel() for t in state.values()))
PY
cp ~/drafter_real/config.json ~/drafter_real/calibration.json ~/drafter_real/training.json $S/
tar -C ~/stash -cf ~/stash/drafter_bf16.tar drafter_bf16 && sha256sum ~/stash/drafter_bf16.tar
(cd ~/stash/parts && split -b 15M ../drafter_bf16.tar drafter_part_) && ls -la ~/stash/parts
cp ~/stash/parts/drafter_part_a? $OUT/
echo "stash done at ${SECONDS} s"
