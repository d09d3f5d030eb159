# Session 38, call 6: a drafter trained as session 37's (330 s, batch 64, grouped attention;
# held-out 2.48 of 7) on twice the prompts: 10,400, two per docstring in different templates
# (--prompts-per-docstring 2). If its held-out acceptance beats 2.48 its bf16 tar is split in three parts
# that the next calls bring back (a return's total is limited). (Calls 4-5 had the stash; the GGUF was joined in call 3.)
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 545 deepinfer-dspark train --target $T --out $HOME/drafter_real --num-prompts 10400 --prompts-per-docstring 2 \
  --batch-size 64 --steps 40000 --max-train-seconds 330 > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"
grep " step " $OUT/train.log | awk 'NR % 10 == 1' | tail -4; grep -v " step " $OUT/train.log | grep -v GGUF | tail -6
cp ~/drafter_real/training.json ~/drafter_real/calibration.json $OUT/ 2>/dev/null
python3 - <<'PY' || exit 0
import json, os, torch
from safetensors.torch import load_file, save_file
src, dst = os.path.expanduser("~/drafter_real"), os.path.expanduser("~/stash/drafter_bf16")
accepted = json.load(open(f"{src}/training.json"))["calibration"]["mean_accepted"]
print("held-out mean accepted", accepted)
if accepted <= 2.4786:   # session 37's drafter: 2.4785
    raise SystemExit(1)
os.makedirs(dst, exist_ok=True)
state = {k: v.to(torch.bfloat16).contiguous() for k, v in load_file(f"{src}/model.safetensors").items()
         if k not in ("embed_tokens.weight", "lm_head.weight")}
save_file(state, f"{dst}/model.safetensors", metadata={"format": "pt"})
PY
cp ~/drafter_real/config.json ~/drafter_real/calibration.json ~/drafter_real/training.json ~/stash/drafter_bf16/
mkdir -p ~/stash/parts && tar -C ~/stash -cf ~/stash/drafter_bf16.tar drafter_bf16 && sha256sum ~/stash/drafter_bf16.tar
(cd ~/stash/parts && split -n 3 ../drafter_bf16.tar drafter_part_) && ls -la ~/stash/parts
echo "stash done at ${SECONDS} s"
