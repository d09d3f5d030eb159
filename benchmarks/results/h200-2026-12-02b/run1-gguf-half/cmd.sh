# Session 25, call 1: the first half of the SmolLM2-135M-Instruct GGUF onto the machine (call 2,
# issued at once, carries the second half) and the GPU environment.
# Carry: .cache/gpu_wheels .cache/gguf/part_aa
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh > $OUT/env.log 2>&1
python3 -c "import torch, deepinfer_dspark; print(torch.__version__, torch.cuda.get_device_name())"
ls -la ~/gguf
nvidia-smi -q -d PERFORMANCE | head -30
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -c 1
