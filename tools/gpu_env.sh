# Source on the GPU machine (repository root): installs deepinfer-kernels (compiled parts) and the
# wheels the GPU image lacks (pre-downloaded into .cache/gpu_wheels), and points PYTHONPATH at the
# other packages' sources. Usage: `source tools/gpu_env.sh`.
export NCCL_NVLS_ENABLE=0
python3 -m pip install -q --no-deps .cache/gpu_wheels/*.whl
(cd packages/deepinfer-kernels && python3 -m pip install -q --no-deps --no-build-isolation .)
export PYTHONPATH=$PWD/packages/deepinfer-core/src:$PWD/packages/deepinfer-recipe/src:$PWD/packages/deepinfer-cli/src
