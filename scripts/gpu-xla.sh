#!/usr/bin/env bash
# Run a command with GoMLX's XLA backend on an NVIDIA GPU, using the PJRT CUDA
# plugin that JAX ships (pip package jax-cuda13-pjrt / jax-cuda12-pjrt).
#
#   scripts/gpu-xla.sh ./models.test -test.run XXX -test.bench ScoreNet
#
# Binaries must be built with the xla tag (cgo), e.g.
#   go test -tags xla -c -o models.test ./models/
# GoMLX looks for pjrt_c_api_<name>_plugin.so; JAX names its plugin
# xla_cuda_plugin.so and finds the CUDA libraries through $ORIGIN/../nvidia,
# so we link both into one folder.
set -euo pipefail
py=${PYTHON:-python3}
plugin_dir=$("$py" - <<'PY'
import importlib, os
for name in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
    try:
        m = importlib.import_module(name)
        print(os.path.dirname(m.__file__)); break
    except ImportError:
        pass
PY
)
if [ -z "$plugin_dir" ] || [ ! -f "$plugin_dir/xla_cuda_plugin.so" ]; then
  echo "gpu-xla: no JAX CUDA PJRT plugin found (pip install jax[cuda13])" >&2; exit 2
fi
site=$(dirname "$(dirname "$plugin_dir")")
root=${DFX_PJRT_DIR:-/tmp/dfx-pjrt}
mkdir -p "$root/lib"
ln -sfn "$plugin_dir/xla_cuda_plugin.so" "$root/lib/pjrt_c_api_cuda_plugin.so"
[ -d "$site/nvidia" ] && ln -sfn "$site/nvidia" "$root/nvidia"
export PJRT_PLUGIN_LIBRARY_PATH="$root/lib" GOMLX_NO_AUTO_INSTALL=1 GOMLX_BACKEND=${GOMLX_BACKEND:-xla:cuda}
exec "$@"
