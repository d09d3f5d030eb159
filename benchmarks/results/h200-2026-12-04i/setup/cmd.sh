# Session 47, setup calls: the tree is now 44 MiB, so a 20 MiB GGUF part no longer fits beside it in one call's carry
# (64 MiB). The GGUF goes over in seven 15 MiB parts (`split -b 15M GGUF .cache/gguf_q6/part_`: aa..ag), one a call,
# carrying only that part; the drafter's parts aa-ac as in session 45 (`h200-2026-12-04g/setup/cmd.sh`).
# Each call: `bash benchmarks/results/h200-2026-12-04i/setup/cmd.sh gguf_q6/part_aX`, carrying .cache/gguf_q6/part_aX.
P=$1; mkdir -p ~/gguf6
case $P in
  gguf_q6/part_a?) cp .cache/$P ~/gguf6/ ;;
  *) echo "unknown part $P"; exit 2 ;;
esac
ls -la ~/gguf6
if [ "$P" = gguf_q6/part_ag ]; then
  mkdir -p ~/.cache/deepinfer/models && cat ~/gguf6/part_a? > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
  sha256sum ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
fi
