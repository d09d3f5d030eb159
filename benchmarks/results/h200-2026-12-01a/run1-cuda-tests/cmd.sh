# Session 16, call 1: the CUDA-only tests of the code written in session 15 without a GPU
# (feature-free decode graphs `plain_graphs` sharing the feature graphs' pool; declined steps),
# next to the other graph tests, before any benchmark depends on them.
source tools/gpu_env.sh > $OUT/env.log 2>&1
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name())"
timeout 400 python3 -m pytest -q -rf --tb=short -p no:cacheprovider \
  packages/deepinfer-core/tests/test_spec_plugin_faults.py \
  packages/deepinfer-core/tests/test_runner_cuda_graph_padding.py \
  packages/deepinfer-dspark/tests/test_draft_graph.py packages/deepinfer-dspark/tests/test_observe_graph.py \
  packages/deepinfer-dspark/tests/test_decline_features.py > $OUT/pytest.log 2>&1
tail -25 $OUT/pytest.log
