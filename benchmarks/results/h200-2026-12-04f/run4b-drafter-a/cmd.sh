# Session 44, call 4b: the K = 3 drafter's first part (a call of its own: beside the GGUF's last quarter it passes the carry limit).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/drafter_gz_aa
ls ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
mkdir -p ~/stash && cp .cache/drafter_stash/drafter_gz_aa ~/stash/ && ls -la ~/stash
