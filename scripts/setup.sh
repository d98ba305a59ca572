#!/usr/bin/env bash
# setup.sh — installs what `make test` and the notebooks need on Debian 12,
# skipping whatever is already present (safe to run again).
#   Jupyter (Debian packages), GoNB v0.11.5 (kernel "gonb", with GOEXPERIMENT=simd in its environment), goimports, gopls,
#   libopenblas-dev and python3-numpy (for `make bench` and the -tags openblas build),
#   Debian's chromium (for the notebooks' browser test, scripts/browser_test.py).
# Usage: scripts/setup.sh [--blas | --no-blas | --no-browser | --apt-only | --go-tools-only]
#   --blas           only install libopenblas-dev and python3-numpy
#   --no-blas        everything but libopenblas-dev and python3-numpy
#   --no-browser     everything but chromium (the Docker image leaves it out)
#   --apt-only       only the Debian packages (as root; the Dockerfile runs this before USER)
#   --go-tools-only  only goimports, gopls and gonb into $(go env GOPATH)/bin (no apt, no kernel)
set -euo pipefail

GONB_VERSION=v0.11.5   # the version GoMLX v0.28.8 requires
GOIMPORTS_VERSION=v0.36.0
GOPLS_VERSION=v0.23.0

log() { printf 'setup: %s\n' "$*" >&2; }

SUDO=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=(sudo -E); else
    log "not root and no sudo: apt-get steps will probably fail"; fi
fi

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if [ -z "${DFX_APT_UPDATED:-}" ]; then
    "${SUDO[@]}" apt-get update -q </dev/null
    DFX_APT_UPDATED=1
  fi
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" </dev/null
}

# OpenBLAS (the optional -tags openblas build) and NumPy (make bench's reference).
install_blas() {
  if dpkg -s libopenblas-dev >/dev/null 2>&1; then log "libopenblas-dev present"; else
    log "installing libopenblas-dev"; apt_install libopenblas-dev; fi
  if /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1; then log "python3-numpy present"; else
    log "installing python3-numpy"; apt_install python3-numpy; fi
}
blas=1 apt=1 gotools=1 kernel=1 browser=1
for a in "$@"; do
  case "$a" in
    --blas) install_blas; exit 0 ;;
    --no-blas) blas=0 ;;
    --no-browser) browser=0 ;;
    --apt-only) gotools=0 kernel=0 ;;
    --go-tools-only) blas=0 apt=0 kernel=0 browser=0 ;;
    *) log "unknown argument $a (see the header of scripts/setup.sh)"; exit 2 ;;
  esac
done
if [ "$blas" = 1 ]; then install_blas; fi

# 1. Jupyter from Debian (runs on /usr/bin/python3).
if [ "$apt" = 0 ]; then :
elif [ -x /usr/bin/jupyter ] && /usr/bin/python3 -c 'import nbclient, nbconvert, ipykernel, jupyter_client, notebook' >/dev/null 2>&1; then
  log "jupyter present"
else
  log "installing jupyter (apt, ~90 s)"
  apt_install jupyter-notebook jupyter-nbconvert python3-nbclient python3-ipykernel jupyter-client
fi

# 1b. A real browser for the notebooks' browser test (≈ 1 min, ≈ 0.3 GB).
if [ "$apt" = 0 ] || [ "$browser" = 0 ]; then :
elif command -v chromium >/dev/null 2>&1; then log "chromium present"
else
  log "installing chromium (apt, ~1 min)"
  apt_install chromium
fi

if [ "$gotools" = 0 ]; then log "ready (Debian packages only)"; exit 0; fi

command -v go >/dev/null 2>&1 || { log "go not on PATH (need Go >= 1.26)"; exit 1; }
GOBIN_DIR="$(go env GOBIN)"; [ -n "$GOBIN_DIR" ] || GOBIN_DIR="$(go env GOPATH)/bin"
export PATH="$GOBIN_DIR:$PATH"

# 2. goimports and gopls (GoNB uses both).
if [ -x "$GOBIN_DIR/goimports" ]; then log "goimports present"; else
  log "installing goimports $GOIMPORTS_VERSION"
  (cd / && GOFLAGS= go install "golang.org/x/tools/cmd/goimports@$GOIMPORTS_VERSION")
fi
if [ -x "$GOBIN_DIR/gopls" ]; then log "gopls present"; else
  log "installing gopls $GOPLS_VERSION (~65 s)"
  (cd / && GOFLAGS= go install "golang.org/x/tools/gopls@$GOPLS_VERSION")
fi

# 3. GoNB: `go install ...@VERSION` is refused by the proxy, so build it from a throwaway module.
#    A stamp file records the installed version; another version is replaced.
stamp="$GOBIN_DIR/.gonb-version"
if [ -x "$GOBIN_DIR/gonb" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$GONB_VERSION" ]; then log "gonb $GONB_VERSION present"; else
  log "installing gonb $GONB_VERSION"
  tmp="$(mktemp -d)"
  (cd "$tmp" && go mod init dfx-tools >/dev/null 2>&1 \
     && GOFLAGS= go get "github.com/janpfeifer/gonb@$GONB_VERSION" \
     && GOFLAGS= GOBIN="$GOBIN_DIR" go install github.com/janpfeifer/gonb)
  rm -rf "$tmp"
  echo "$GONB_VERSION" >"$stamp"
  rm -f "$GOBIN_DIR/.gonb-kernel"   # reinstall the kernel for the new binary
fi
if [ "$kernel" = 0 ]; then log "ready (Go tools only, in $GOBIN_DIR)"; exit 0; fi
if /usr/bin/jupyter kernelspec list 2>/dev/null | awk '{print $1}' | grep -qx gonb && [ -e "$GOBIN_DIR/.gonb-kernel" ]; then
  log "gonb kernel present"
else
  log "installing the gonb Jupyter kernel"
  "$GOBIN_DIR/gonb" --install --raw_error
  touch "$GOBIN_DIR/.gonb-kernel"
fi
# The kernel builds every cell with its own environment: without
# GOEXPERIMENT=simd there, GoMLX's SIMD kernels are silently missing.
kdir="$(/usr/bin/jupyter kernelspec list 2>/dev/null | awk '$1 == "gonb" {print $2}')"
if [ -n "$kdir" ] && [ -f "$kdir/kernel.json" ]; then
  # DFX_KERNEL_ENV="K=V ..." adds further variables (the Dockerfile's GPU variant sets the XLA ones).
  /usr/bin/python3 - "$kdir/kernel.json" ${DFX_KERNEL_ENV:-} <<'PY'
import json, sys
p = sys.argv[1]
k = json.load(open(p))
env = k.setdefault("env", {})
want = dict([("GOEXPERIMENT", "simd")] + [a.split("=", 1) for a in sys.argv[2:]])
changed = {key: v for key, v in want.items() if env.get(key) != v}
if changed:
    env.update(changed)
    json.dump(k, open(p, "w"), indent=2)
    print("setup: set in the gonb kernel's environment: %s" % " ".join("%s=%s" % kv for kv in changed.items()), file=sys.stderr)
PY
fi
log "ready (GOBIN=$GOBIN_DIR must be on PATH for the gonb kernel)"
