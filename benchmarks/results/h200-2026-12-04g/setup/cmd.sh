# Session 45, setup calls (the tree grew: a 25 MiB GGUF quarter beside it passes the 64 MiB carry limit): the GGUF in five
# 20 MiB parts (.cache/gguf_q5/part_aa..ae, `split -b 20M`), then the drafter's parts aa, ab, ac one a call; ad rides with
# the benchmark call. Each call: `bash benchmarks/results/h200-2026-12-04g/setup/cmd.sh PART` carrying the wheel, build and PART.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf_q5/PART or .cache/drafter_stash/PART
P=$1; mkdir -p ~/gguf ~/stash
case $P in
  gguf_q5/part_a?) cp .cache/$P ~/gguf/ ;;
  drafter_stash/drafter_gz_a?) cp .cache/$P ~/stash/ ;;
  *) echo "unknown part $P"; exit 2 ;;
esac
ls -la ~/gguf ~/stash
if [ "$P" = gguf_q5/part_ae ]; then
  mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_a? > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
  sha256sum ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
fi
