# Session 26, call 1: the first half of the SmolLM2-135M-Instruct GGUF onto the machine (call 2,
# issued at once, carries the second half), the GPU environment, and proposer_host_cost.py on
# the device machine's host (device-free: confidence's host work per drafted round against
# fixed-k's, on session 25's call 8 profiles; on the CPU machine +25 / +34 / +69 us at 1 / 2 / 8).
# Carry: .cache/gpu_wheels .cache/gguf/part_aa
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh > $OUT/env.log 2>&1
python3 -c "import torch, deepinfer_dspark; print(torch.__version__, torch.cuda.get_device_name())"
ls -la ~/gguf
timeout 120 python3 packages/deepinfer-dspark/benchmarks/proposer_host_cost.py \
  --profiles benchmarks/results/h200-2026-12-02b/run8-whole-fast --batch 1 2 8 --repeats 5 > $OUT/host_cost.md 2>&1
echo "host cost rc $?"; tail -6 $OUT/host_cost.md
