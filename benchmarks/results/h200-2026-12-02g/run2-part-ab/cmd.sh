# Session 30, calls 2a/2b: one third of the GGUF each (the machine went back between calls 1 and 2,
# so call 2a carries the first third again, call 2b the second).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_a?
mkdir -p ~/gguf && cp .cache/gguf/part_a? ~/gguf/ && ls -la ~/gguf
