# Session 58 (after `../setup58/cmd.sh` part_00..part_02): this checkout lost the drafter stash, so train it again with
# session 46's call (`h200-2026-12-04h/run1-train`; session 38's recipe, held-out ~3.1 of 7): 10,400 prompts, two per
# docstring, batch 64, 330 s of training; its bf16 tar (no embedding / LM head) gzip'd and split in four parts, all
# returned here. Then ~/drafter_real becomes that bf16 copy, as `ready.sh` would unpack it from a carried stash.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build
ls ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
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
gzip -1 -c ~/stash/drafter_bf16.tar > ~/stash/drafter_bf16.tar.gz && sha256sum ~/stash/drafter_bf16.tar.gz
(cd ~/stash/parts && split -n 4 ../drafter_bf16.tar.gz drafter_gz_) && ls -la ~/stash/parts
cp ~/stash/parts/drafter_gz_a? $OUT/
echo "stash done at ${SECONDS} s"
rm -rf ~/drafter_real && cp -r ~/stash/drafter_bf16 ~/drafter_real && ls -la ~/drafter_real
