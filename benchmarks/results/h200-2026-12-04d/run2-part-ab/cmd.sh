# Session 42, call 2: the GGUF's second third.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ab
ls ~/gguf/part_aa || exit 3
cp .cache/gguf/part_ab ~/gguf/ && ls -la ~/gguf
