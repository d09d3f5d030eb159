# Session 58: this checkout lost `.cache` (the drafter stash and the bundle), so the GGUF goes over alone in three
# parts (`split -n 3 -d GGUF .cache/gguf/part_`, 32.8 MB each: with the 30 MB tracked tree, 60 MiB of the 64 MiB
# carry) and `../train58/cmd.sh` trains the drafter again. Each call: `bash benchmarks/results/h200-2026-12-05/setup58/cmd.sh
# part_0X` (X = 0..2, one right after the other: ~ survives only while the machine stays warm), carrying
# .cache/gguf/part_0X alone. The last joins them under ~/.cache/deepinfer/models.
P=$1; mkdir -p ~/gguf
case $P in
  part_0[0-2]) cp .cache/gguf/$P ~/gguf/ || exit 3 ;;
  *) echo "unknown part $P"; exit 2 ;;
esac
ls -la ~/gguf
if [ "$P" = part_02 ]; then
  ls ~/gguf/part_00 ~/gguf/part_01 || exit 3
  mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_0? > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
  sha256sum ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; rm -rf ~/gguf
fi
