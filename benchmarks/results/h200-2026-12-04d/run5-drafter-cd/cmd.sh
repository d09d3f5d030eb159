# Session 42, call 5: the drafter's last two parts, joined (tar.gz sha256 460a13a0...6186).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/drafter_gz_ac .cache/drafter_stash/drafter_gz_ad
ls ~/stash/drafter_gz_aa ~/stash/drafter_gz_ab || exit 3
cp .cache/drafter_stash/drafter_gz_a? ~/stash/ && cat ~/stash/drafter_gz_a? | sha256sum
cat ~/stash/drafter_gz_a? | gunzip | tar -x -C ~ && rm -rf ~/drafter_real && mv ~/drafter_bf16 ~/drafter_real || exit 3
ls ~/drafter_real
