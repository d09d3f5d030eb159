# Session 69: a new CPU checkout lost `.cache` (the drafter stash and the bundle), so the GGUF goes over in four
# parts (`split -n 4 -d GGUF .cache/gguf4/part_`: 23.5 MiB each beside the 32.8 MiB tree) and the last call trains
# the drafter (session 38's recipe, as `h200-2026-12-03h/run8-part-ac-train/cmd.sh`: 10,400 prompts, batch 64,
# 330 s) into ~/drafter_real (what `../../h200-2026-12-04i/setup/ready.sh` looks for), returning it in four gzip'd
# bf16 parts for `.cache/drafter_stash` on the CPU machine.
# Each call: `bash benchmarks/results/h200-2026-12-06/setup/cmd.sh part_0X` (X = 0..3, one call after the other at
# once: ~ survives only while the machine stays warm), carrying .cache/gguf4/part_0X alone; the last also carries
# .cache/gpu_wheels (the train needs the GPU environment).
# Session 73 (~900 s of device time left after refused starts): `TRAIN_S=150 STASH=0 bash .../cmd.sh part_03` trains
# for 150 s (a weaker drafter, for one lease's diagnosis) and returns no stash.
# Session 85: the tree is 39.3 MiB, so `split -n 5 -d GGUF .cache/gguf/part_` (18.8 MiB a part) and
# `G=gguf LAST=part_04 bash .../cmd.sh part_0X`; the defaults (G=gguf4, LAST=part_03) are session 69's.
P=$1; G=${G:-gguf4}; LAST=${LAST:-part_03}; mkdir -p ~/$G
case $P in
  part_0[0-9]) cp .cache/$G/$P ~/$G/ || exit 3 ;;
  *) echo "unknown part $P"; exit 2 ;;
esac
ls -la ~/$G
[ "$P" = "$LAST" ] || exit 0
for i in $(seq 0 ${LAST#part_0}); do ls ~/$G/part_0$i || exit 3; done
mkdir -p ~/.cache/deepinfer/models && cat ~/$G/part_0? > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf   # b179c952...db53
source tools/gpu_env.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 500 deepinfer-dspark train --target $T --out $HOME/drafter_real --num-prompts 10400 --prompts-per-docstring 2 \
  --batch-size 64 --steps 40000 --max-train-seconds ${TRAIN_S:-330} > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"
grep " step " $OUT/train.log | awk 'NR % 10 == 1' | tail -4; grep -v " step " $OUT/train.log | grep -v GGUF | tail -6
cp ~/drafter_real/training.json ~/drafter_real/calibration.json $OUT/ 2>/dev/null
[ "${STASH:-1}" = 1 ] || exit 0   # session 73: STASH=0 returns no drafter parts (a short train for one lease)
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
tar -C ~/stash -cf ~/stash/drafter_bf16.tar drafter_bf16 && gzip -1 -c ~/stash/drafter_bf16.tar > ~/stash/drafter_bf16.tar.gz
sha256sum ~/stash/drafter_bf16.tar ~/stash/drafter_bf16.tar.gz
(cd ~/stash/parts && split -n 4 ../drafter_bf16.tar.gz drafter_gz_) && cp ~/stash/parts/drafter_gz_a? $OUT/
echo "stash done at ${SECONDS} s"
