# Session 10, call 8 (right after call 7, 100 s of device time left): the confidence proposer's
# ledger, acceptance ratios and drafter calls per batch size after 4 chat batches of 8 requests.
source tools/gpu_env.sh >/dev/null 2>&1
timeout 70 python3 benchmarks/results/h200-2026-11-30g/run8-ledger-state/diag.py 2>&1 | grep -v "USDT\|_warn\|Warn" | tail -12
