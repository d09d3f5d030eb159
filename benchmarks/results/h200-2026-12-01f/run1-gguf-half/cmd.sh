# Session 21, call 1: the first half of the SmolLM2-135M-Instruct GGUF onto the machine (call 2,
# issued at once, carries the second half), the GPU environment, and where a drafter training
# step's time goes with the target cached once per sequence (TargetCache, session 20) and without
# it (--no-cache), on a random-weight SmolLM2-135M-shaped target (config and tokenizer carried in
# .cache/smollm2_shape; weights drawn here by random_target.py).
# Carry: .cache/gpu_wheels .cache/gguf/part_aa .cache/smollm2_shape
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh > $OUT/env.log 2>&1
python3 -c "import torch, deepinfer_dspark; print(torch.__version__, torch.cuda.get_device_name())"
export PYTHONUNBUFFERED=1
rm -rf ~/shape && cp -r .cache/smollm2_shape ~/shape && python3 packages/deepinfer-dspark/benchmarks/random_target.py ~/shape
timeout 110 python3 packages/deepinfer-dspark/benchmarks/train_step_profile.py --target ~/shape > $OUT/train_profile_cache.txt 2>&1
echo "cache rc $? at ${SECONDS} s"
timeout 110 python3 packages/deepinfer-dspark/benchmarks/train_step_profile.py --target ~/shape --no-cache > $OUT/train_profile_nocache.txt 2>&1
echo "no-cache rc $? at ${SECONDS} s"
grep -v Warn $OUT/train_profile_cache.txt | head -9; grep -v Warn $OUT/train_profile_nocache.txt | head -9
ls -la ~/gguf
