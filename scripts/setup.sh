#!/usr/bin/env bash
# setup.sh — installs what `make test` and the notebooks need on Debian 12,
# skipping whatever is already present (safe to run again).
#   Jupyter (Debian packages), GoNB v0.11.5 (kernel "gonb", with GOEXPERIMENT=simd in its environment), goimports, gopls,
#   libopenblas-dev and python3-numpy (for `make bench` and the -tags openblas build).
# Usage: scripts/setup.sh [--blas]   (--blas: only install libopenblas-dev and python3-numpy)
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
if [ "${1:-}" = "--blas" ]; then
  install_blas
  exit 0
fi
install_blas

command -v go >/dev/null 2>&1 || { log "go not on PATH (need Go >= 1.26)"; exit 1; }
GOBIN_DIR="$(go env GOBIN)"; [ -n "$GOBIN_DIR" ] || GOBIN_DIR="$(go env GOPATH)/bin"
export PATH="$GOBIN_DIR:$PATH"

# 1. Jupyter from Debian (runs on /usr/bin/python3).
if [ -x /usr/bin/jupyter ] && /usr/bin/python3 -c 'import nbclient, nbconvert, ipykernel, jupyter_client, notebook' >/dev/null 2>&1; then
  log "jupyter present"
else
  log "installing jupyter (apt, ~90 s)"
  apt_install jupyter-notebook jupyter-nbconvert python3-nbclient python3-ipykernel jupyter-client
fi

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
  /usr/bin/python3 - "$kdir/kernel.json" <<'PY'
import json, sys
p = sys.argv[1]
k = json.load(open(p))
env = k.setdefault("env", {})
if env.get("GOEXPERIMENT") != "simd":
    env["GOEXPERIMENT"] = "simd"
    json.dump(k, open(p, "w"), indent=2)
    print("setup: GOEXPERIMENT=simd set in the gonb kernel's environment", file=sys.stderr)
PY
fi
log "ready (GOBIN=$GOBIN_DIR must be on PATH for the gonb kernel)"
