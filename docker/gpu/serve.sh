#!/usr/bin/env bash
# On a lent GPU machine, in the repository root (see docker/gpu/README.md), two calls while it stays warm:
#   bash docker/gpu/serve.sh cuda                 # carry .gpu/serve-cuda: unpacks ONNX Runtime's CUDA provider
#   bash docker/gpu/serve.sh faiss                # carry .gpu/serve-faiss: unpacks GPU FAISS (optional; else faiss-cpu)
#   OUT=$OUT bash docker/gpu/serve.sh bench ARGS  # carry .gpu/serve: the rest, then docker/gpu/serve_bench.py ARGS
#   bash docker/gpu/serve.sh run COMMAND...       # any command in the staged environment (python3 -m pytest ...)
# PYTHON (default python3), T (default /tmp/tv) and CARRIED (default .gpu) can be set. Dry-run on the CPU by
# tests/bench/test_gpu_serve_script.py.
set -euo pipefail
PYTHON=${PYTHON:-python3} T=${T:-/tmp/tv} CARRIED=${CARRIED:-.gpu}
mkdir -p "$T"
unxz() { "$PYTHON" -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'), 1 << 24)" "$1" "$2"; }
case "${1:-}" in
cuda)
  unxz "$CARRIED/serve-cuda/cuda.so.xz" "$T/cuda.so.part" && mv "$T/cuda.so.part" "$T/cuda.so"
  ls -l "$T/cuda.so"
  ;;
faiss)
  rm -rf "$T/faiss-gpu"
  "$PYTHON" -c "import tarfile, sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" "$CARRIED/serve-faiss/faiss.tar.xz" "$T"
  du -sh "$T/faiss-gpu"
  ;;
bench | run)
  step=$1
  shift
  if [ ! -d "$T/site" ]; then
    "$PYTHON" -c "import tarfile, sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" "$CARRIED/serve/site.tar.xz" "$T"
  fi
  lib="$T/site/onnxruntime/capi/libonnxruntime_providers_cuda.so"
  if [ -f "$T/cuda.so" ]; then mv "$T/cuda.so" "$lib"; fi
  [ -f "$lib" ] || echo "no CUDA provider staged ('serve.sh cuda' first): ONNX Runtime stays on the CPU" >&2
  mkdir -p "$T/models" "$T/bin"
  "$PYTHON" -c "import tarfile, sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" "$CARRIED/serve/models.tar.xz" "$T/models"
  if [ -f "$CARRIED/serve/wrk" ] && ! command -v wrk >/dev/null; then
    cp "$CARRIED/serve/wrk" "$CARRIED/serve/libluajit-5.1.so.2" "$T/bin/" && chmod +x "$T/bin/wrk"
  fi
  # CUDA 13 and cuDNN 9 come from the machine's own nvidia-* pip packages (PyTorch's).
  NV=$("$PYTHON" -c "import nvidia, os; print(list(nvidia.__path__)[0])" 2>/dev/null || true)
  LIBS=$T/bin
  if [ -n "$NV" ]; then LIBS=$LIBS:$(find "$NV" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd:); fi
  export LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PATH=$T/bin:$PATH
  # the import name thoughtvec as an install maps it (pyproject.toml's package-dir), as links to this checkout
  mkdir -p "$T/pkg/thoughtvec"
  for f in thoughtvec/*; do ln -sfn "$PWD/$f" "$T/pkg/thoughtvec/"; done
  for d in service bench training; do ln -sfn "$PWD/$d" "$T/pkg/thoughtvec/$d"; done
  export PYTHONPATH=$T/site:$T/pkg PYTHONUNBUFFERED=1 ORT_DISABLE_TELEMETRY=1
  # GPU FAISS, where 'serve.sh faiss' staged it, ahead of the serving install's faiss-cpu: if it imports
  if [ -d "$T/faiss-gpu" ]; then
    if PYTHONPATH=$T/faiss-gpu:$PYTHONPATH "$PYTHON" -c "import faiss; print('GPU FAISS', faiss.__version__, 'sees', faiss.get_num_gpus(), 'GPU(s)')"; then
      export PYTHONPATH=$T/faiss-gpu:$PYTHONPATH
    else
      echo "GPU FAISS does not import here (above): faiss-cpu it is" >&2
    fi
  fi
  "$PYTHON" -c "import onnxruntime as o, fastapi, faiss; print('onnxruntime', o.__version__, o.get_available_providers(), '| faiss', faiss.__version__)"
  if [ "$step" = run ]; then exec "$@"; fi
  exec "$PYTHON" docker/gpu/serve_bench.py --models-dir "$T/models" --out "${OUT:-$T/out}" "$@"
  ;;
*)
  echo "usage: serve.sh cuda | serve.sh faiss | serve.sh bench [serve_bench.py arguments] | serve.sh run COMMAND..." >&2
  exit 2
  ;;
esac
