# Session 36, call 2: the GGUF's second third.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ab
mkdir -p ~/gguf && cp .cache/gguf/part_a? ~/gguf/ && ls -la ~/gguf
