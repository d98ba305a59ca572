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

# torch_rows SRC LOG: the rows file's lines of a PyTorch log's "RESULT name=N
# ms=W min_ms=… inner=… cpu_ms=C" lines (SRC<TAB>N<TAB>W and cpu-SRC<TAB>N<TAB>C)
# and "RATE name=N threads=… value=V" lines (rate:<TAB>N<TAB>V).
torch_rows() {
  awk -v src="$1" 'function val(f) { sub(/^[^=]*=/, "", f); return f }
    /^RESULT /{ printf "%s\t%s\t%s\ncpu-%s\t%s\t%s\n", src, val($2), val($3), src, val($2), val($6) }
    /^RATE /{ printf "rate:\t%s\t%s\n", val($2), val($4) }' "$2"
}

# go_bench NAME PKG PATTERN PROGRAM: one round of `go test -run '^$' -bench
# PATTERN -benchtime $BENCHTIME -count 1 PKG` into $tmp/go.log; prints its
# benchmark lines and appends the rows the awk PROGRAM (fields split at blanks)
# makes of the log to $rows; on a failure, or without a benchmark line, NAME's
# message and status=1; then the load line. The caller sets tmp, rows, status.
go_bench() {
  local name=$1 pkg=$2 pattern=$3 program=$4 log="$tmp/go.log"
  echo "== Go: go test -run '^\$' -bench '$pattern' -benchtime $BENCHTIME -count 1 $pkg"
  if go test -run '^$' -bench "$pattern" -benchtime "$BENCHTIME" -count 1 "$pkg" >"$log" 2>&1; then
    grep -E '^(Benchmark|cpu)' "$log"
    awk -F'[ \t]+' "$program" "$log" >>"$rows"
    grep -q '^Benchmark' "$log" || { echo "$name: no benchmark line in the Go output"; status=1; }
  else
    tail -n 30 "$log"; echo "$name: the Go benchmark failed"; status=1
  fi
  load_line
}

# torch_bench NAME SRC THREADS SHOWN ARGS…: one PyTorch run, `$PY ARGS…
# --threads T` (SHOWN: how the log names it) and bench_torch_eps.py --machine
# at T threads, both with OMP_WAIT_POLICY=PASSIVE where THREADS is "Tp",
# into $tmp/pt.log; prints it and appends its rows (torch_rows SRC) to $rows;
# on a failure NAME's message and status=1; then the load line.
torch_bench() {
  local name=$1 src=$2 threads=$3 shown=$4 t envs=(env)
  shift 4
  t="${threads%p}"
  [ "$t" != "$threads" ] && envs=(env OMP_WAIT_POLICY=PASSIVE)
  echo "== PyTorch: ${envs[*]:1} $PY $shown --threads $t; bench_torch_eps.py --machine --threads $t"
  if "${envs[@]}" "$PY" "$@" --threads "$t" >"$tmp/pt.log" 2>&1 &&
    "${envs[@]}" "$PY" "$(dirname "${BASH_SOURCE[0]}")/bench_torch_eps.py" --machine --threads "$t" >>"$tmp/pt.log" 2>&1; then
    cat "$tmp/pt.log"
    torch_rows "$src" "$tmp/pt.log" >>"$rows"
  else
    cat "$tmp/pt.log"; echo "$name: PyTorch ($threads threads) failed"; status=1
  fi
  load_line
}
