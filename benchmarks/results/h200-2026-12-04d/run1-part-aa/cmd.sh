# Session 42, call 1: the GGUF's first third.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_aa
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/ && ls -la ~/gguf
