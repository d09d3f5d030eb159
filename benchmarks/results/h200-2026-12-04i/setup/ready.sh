# Sourced by this session's benchmark calls (run1, run2-table) before they start: the GGUF must be joined under ~
# (`cmd.sh`, seven calls) and the drafter's parts aa-ac copied to ~/stash (`h200-2026-12-04g/setup/cmd.sh`); the
# calling command carries part ad, which this joins and unpacks into ~/drafter_real once. Then the GPU environment.
ls ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
if [ ! -f ~/drafter_real/config.json ]; then
  ls ~/stash/drafter_gz_aa ~/stash/drafter_gz_ab ~/stash/drafter_gz_ac || exit 3
  cp .cache/drafter_stash/drafter_gz_ad ~/stash/ && cat ~/stash/drafter_gz_a? | sha256sum
  cat ~/stash/drafter_gz_a? | gunzip | tar -x -C ~ && rm -rf ~/drafter_real && mv ~/drafter_bf16 ~/drafter_real || exit 3
fi
source tools/gpu_env.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1
