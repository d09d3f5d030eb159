# Session 20, call 6 (a fresh machine): a random-weight SmolLM2-135M-shaped target (config and
# tokenizer carried in .cache/smollm2_shape, weights drawn there by random_target.py), then
# (1) where a drafter training step's time goes (train_step_profile.py, the train CLI's shape:
# 64 sequences a step, 32 anchors, 2 layers), and (2) what a paused DSpark engine costs at 8 and
# 32 requests against none and none-again (bench_paused.py, 7 paired rounds; the random drafter
# never drafts from 2 requests up: every step is a declined, mostly dormant one), with cProfile
# and torch.profiler tables of each engine at 8.
source tools/gpu_env.sh > ~/env.log 2>&1 || tail -5 ~/env.log
export PYTHONUNBUFFERED=1
rm -rf ~/shape && cp -r .cache/smollm2_shape ~/shape && python3 packages/deepinfer-dspark/benchmarks/random_target.py ~/shape
timeout 150 python3 packages/deepinfer-dspark/benchmarks/train_step_profile.py --target ~/shape > $OUT/train_profile.txt 2>&1
head -12 $OUT/train_profile.txt
P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
timeout 330 python3 packages/deepinfer-dspark/benchmarks/bench_paused.py --target ~/shape --spec-sps $P/spec_sps.json \
  --concurrency 8 32 --rounds 7 --max-tokens 128 --out ~/paused.md --profile $OUT/profile.txt \
  --torch-profile $OUT/torch.txt --profile-at 8 > $OUT/bench_paused.log 2>&1
echo "rc $?"; cat ~/paused.md; grep -E "rror|Trace" $OUT/bench_paused.log | tail -5; ls $OUT
