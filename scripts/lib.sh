# lib.sh — what the benchmark and profiling scripts share; sourced, not run.

# go_env puts Go on PATH and sets what every Go build here needs: the Go
# backend's AVX2/AVX-512 kernels (GOEXPERIMENT=simd: 7-11x slower without),
# and no GOMLX_BACKEND, so that the library's own backend config is used.
go_env() {
  [ -d /usr/local/go/bin ] && PATH="$PATH:/usr/local/go/bin"
  export GOEXPERIMENT=simd
  unset GOMLX_BACKEND
}

# parse_opts NAME LINES SPEC ARGS…: each argument must be one of SPEC's
# "--option=assignment" words (the assignment is made); -h prints the lines
# LINES (sed range) of the calling script's header; anything else is an
# error (exit 2).
parse_opts() {
  local name=$1 lines=$2 spec=$3 a s found
  shift 3
  for a in "$@"; do
    if [ "$a" = -h ] || [ "$a" = --help ]; then sed -n "${lines}p" "${BASH_SOURCE[1]}"; exit 0; fi
    found=0
    for s in $spec; do
      if [ "${s%%=*}" = "$a" ]; then eval "${s#*=}"; found=1; fi
    done
    [ "$found" = 1 ] || { echo "$name: unknown argument $a" >&2; exit 2; }
  done
}

# apt_install NAME PKG…: installs Debian packages quietly (with sudo when not
# root), unless the caller's $setup is 0.
apt_install_as() {
  local name=$1 sudo=()
  shift
  [ "${setup:-1}" = 1 ] || return 1
  [ "$(id -u)" = 0 ] || ! command -v sudo >/dev/null 2>&1 || sudo=(sudo)
  echo "$name: apt-get install $*" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >/dev/null &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" </dev/null >/dev/null
}

# load_line: the load average and the cores, for benchmark logs.
load_line() { echo "load: $(uptime | sed 's/.*load average/load average/') ($(nproc) cores)"; }

# need_torch NAME PY: installs python3-torch, numpy and OpenBLAS for PY when
# they are missing (unless $setup is 0); fails when they cannot be had.
need_torch() {
  local name=$1 py=$2
  if ! "$py" -c 'import torch, numpy' >/dev/null 2>&1 || ! ldconfig -p | grep -q 'libopenblas.so.0'; then
    apt_install_as "$name" python3-torch python3-numpy libopenblas0-pthread ||
      { echo "$name: cannot install python3-torch, python3-numpy and libopenblas0-pthread for $py" >&2; return 1; }
  fi
}

# torch_header NAME PY: the lines every PyTorch comparison opens with: date
# and commit, CPU and SIMD, Go and the GoMLX backend, PyTorch.
torch_header() {
  local name=$1 py=$2 simd="no AVX2" opts
  opts="$(sed -n 's/^const goBackendOptions = "\(.*\)".*/\1/p' models/backendconfig.go)"
  grep -q -w avx2 /proc/cpuinfo && simd=AVX2; grep -q -w avx512f /proc/cpuinfo && simd=AVX-512
  echo "$name: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
  echo "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), nproc $(nproc), $simd, $(uname -sr)"
  echo "go: $(go version), GOEXPERIMENT=$GOEXPERIMENT, GOMAXPROCS=${GOMAXPROCS:-$(nproc)}, GOMLX_BACKEND unset (models.TrainBackendConfig = go:$opts)"
  echo "torch: $("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo 'missing'), $py"
}

# interleave_rounds N: N rounds of the caller's go_round and torch_round,
# alternating which goes first (odd rounds Go), so that a load that comes
# and goes hits both.
interleave_rounds() {
  local r
  for ((r = 1; r <= $1; r++)); do
    echo; echo "=== round $r of $1 ($(date -u '+%H:%M:%S UTC'))"
    if ((r % 2)); then go_round; torch_round; else torch_round; go_round; fi
  done
}
