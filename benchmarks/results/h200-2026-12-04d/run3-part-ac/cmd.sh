# Session 42, call 3: the GGUF's last third, joined and checked.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ac
ls ~/gguf/part_aa ~/gguf/part_ab || exit 3
cp .cache/gguf/part_ac ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_a? > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
