# Session 23, call 6 (the machine went cold after call 5): the first half of the SmolLM2-135M-Instruct GGUF onto the machine (call 2,
# issued at once, carries the second half) and the GPU environment.
# Carry: .cache/gpu_wheels .cache/gguf/part_aa
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh > $OUT/env.log 2>&1
python3 -c "import torch, deepinfer_dspark; print(torch.__version__, torch.cuda.get_device_name())"
ls -la ~/gguf
