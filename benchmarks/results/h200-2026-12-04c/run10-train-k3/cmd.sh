# Session 41, second lease, call 10 (gpu_plan 000-b): session 38's drafter recipe with three replies per docstring
# (K = 3: 15,600 prompts; K = 2 gave held-out 3.04-3.12 of 7, K = 1 2.48), batch 64, 280 s of training, into
# ~/drafter_k3 (session 39's drafter stays in ~/drafter_real). Its bf16 tar, gzip'd, split in four, returned.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build
ls ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 500 deepinfer-dspark train --target $T --out $HOME/drafter_k3 --num-prompts 15600 --prompts-per-docstring 3 \
  --batch-size 64 --steps 40000 --max-train-seconds 280 > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"
grep " step " $OUT/train.log | awk 'NR % 10 == 1' | tail -4; grep -v " step " $OUT/train.log | grep -v GGUF | tail -6
cp ~/drafter_k3/training.json ~/drafter_k3/calibration.json $OUT/ 2>/dev/null
S=~/stash3/drafter_bf16; rm -rf ~/stash3; mkdir -p $S ~/stash3/parts
python3 - <<'PY'
import json, os, torch
from safetensors.torch import load_file, save_file
src, dst = os.path.expanduser("~/drafter_k3"), os.path.expanduser("~/stash3/drafter_bf16")
print("held-out mean accepted", json.load(open(f"{src}/training.json"))["calibration"]["mean_accepted"])
state = {k: v.to(torch.bfloat16).contiguous() for k, v in load_file(f"{src}/model.safetensors").items()
         if k not in ("embed_tokens.weight", "lm_head.weight")}
save_file(state, f"{dst}/model.safetensors", metadata={"format": "pt"})
PY
cp ~/drafter_k3/config.json ~/drafter_k3/calibration.json ~/drafter_k3/training.json $S/
tar -C ~/stash3 -cf ~/stash3/drafter_bf16.tar drafter_bf16 && sha256sum ~/stash3/drafter_bf16.tar
gzip -1 -c ~/stash3/drafter_bf16.tar > ~/stash3/drafter_bf16.tar.gz && sha256sum ~/stash3/drafter_bf16.tar.gz
(cd ~/stash3/parts && split -n 4 ../drafter_bf16.tar.gz drafter_gz_) && ls -la ~/stash3/parts
cp ~/stash3/parts/drafter_gz_a? $OUT/
echo "stash done at ${SECONDS} s"
