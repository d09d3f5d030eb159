# Session 44, call 4: the GGUF's last quarter, joined and checked (sha256 b179c952...db53).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf_q/part_ad
ls ~/gguf/part_aa ~/gguf/part_ab ~/gguf/part_ac || exit 3
cp .cache/gguf_q/part_ad ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_a? > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
