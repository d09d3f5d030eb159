# Session 34, call 3b (right after call 3, whose 470 s timeout cut the calibration after training): the same training
# with --max-train-seconds 300 and a 540 s timeout, then the stash of call 3 (bf16 drafter without the embedding /
# LM head, tar in 15 MiB parts; 4 back here, the last in call 4). Sent as one command line (no cmd.sh on the machine).
source tools/gpu_env.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 540 deepinfer-dspark train --target $T --out $HOME/drafter_real --num-prompts 5200 --batch-size 64 --steps 20000 --max-train-seconds 300 > $OUT/train.log 2>&1
echo "train rc $? at ${SECONDS} s"; grep -v " step " $OUT/train.log | grep -v Convert | tail -6; cp ~/drafter_real/training.json ~/drafter_real/calibration.json $OUT/
# ... then call 3's stash lines (python strip + cast, tar, split -b 15M, copy parts aa-ad to $OUT)
