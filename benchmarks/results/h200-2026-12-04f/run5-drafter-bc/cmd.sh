# Session 44, call 5: the drafter's second and third parts.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/drafter_gz_ab .cache/drafter_stash/drafter_gz_ac
ls ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf ~/stash/drafter_gz_aa || exit 3
cp .cache/drafter_stash/drafter_gz_a? ~/stash/ && ls -la ~/stash
