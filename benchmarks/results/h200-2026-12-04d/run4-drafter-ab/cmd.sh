# Session 42, call 4: the K = 3 drafter (session 41), its first two gzip'd parts.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/drafter_gz_aa .cache/drafter_stash/drafter_gz_ab
ls ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
mkdir -p ~/stash && cp .cache/drafter_stash/drafter_gz_a? ~/stash/ && ls -la ~/stash
