# Session 39, call 3: the GGUF's last third, joined; then session 38's drafter recipe (held-out 3.12 of 7, lost
# with its lease): 10,400 prompts, two per docstring in different templates, batch 64, 330 s of training. Its bf16
# tar (no embedding / LM head) is split in 15 MiB parts and parts aa-ad come back in this call (a return holds
# 64 MiB), ae in call 4.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ac
ls ~/gguf/part_aa ~/gguf/part_ab || exit 3
cp .cache/gguf/part_ac ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_a? > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 520 deepinfer-dspark train --target $T --out $HOME/drafter_real --num-prompts 10400 --prompts-per-docstring 2 \
  --batch-size 64 --steps 40000 --max-train-seconds 330 > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"
grep " step " $OUT/train.log | awk 'NR % 10 == 1' | tail -4; grep -v " step " $OUT/train.log | grep -v GGUF | tail -6
cp ~/drafter_real/training.json ~/drafter_real/calibration.json $OUT/ 2>/dev/null
S=~/stash/drafter_bf16; rm -rf ~/stash; mkdir -p $S ~/stash/parts
python3 - <<'PY'
import json, os, torch
from safetensors.torch import load_file, save_file
src, dst = os.path.expanduser("~/drafter_real"), os.path.expanduser("~/stash/drafter_bf16")
print("held-out mean accepted", json.load(open(f"{src}/training.json"))["calibration"]["mean_accepted"])
state = {k: v.to(torch.bfloat16).contiguous() for k, v in load_file(f"{src}/model.safetensors").items()
         if k not in ("embed_tokens.weight", "lm_head.weight")}
save_file(state, f"{dst}/model.safetensors", metadata={"format": "pt"})
PY
cp ~/drafter_real/config.json ~/drafter_real/calibration.json ~/drafter_real/training.json $S/
tar -C ~/stash -cf ~/stash/drafter_bf16.tar drafter_bf16 && sha256sum ~/stash/drafter_bf16.tar
(cd ~/stash/parts && split -b 15M ../drafter_bf16.tar drafter_part_) && ls -la ~/stash/parts
cp ~/stash/parts/drafter_part_a[a-d] $OUT/
echo "stash done at ${SECONDS} s"
