#!/usr/bin/env bash
# docker-test.sh — build the repository's Dockerfile without a registry or a daemon and run
# every notebook (quick profile) inside the image; `make docker-test` and .ci/run call it.
#
# Usage: scripts/docker-test.sh [--keep-image] [--base-only] [--no-notebooks] [--image REF]
#   --keep-image    keep the built image (tagged localhost/dfx:docker-test) for inspection.
#   --image REF     test the existing image REF instead of building one (it is kept).
#   --base-only     only build (or find) the stand-in base image, then stop.
#   --no-notebooks  build and check the image, but skip the notebook run.
#
# No image registry is reachable here, so the Dockerfile's FROM image (golang:1.26-bookworm)
# is replaced by a stand-in built once from Debian's packages: debootstrap --variant=minbase
# bookworm, this machine's Go toolchain in /usr/local/go, GOPATH=/go (mode 1777), the packages
# the official golang image adds (g++ gcc libc6-dev make pkg-config git ca-certificates) and,
# last, this machine's CA bundle (installing ca-certificates rewrites it, and the Go module
# proxy is refused without it behind a TLS-inspecting proxy). It is tagged with the FROM name
# and with localhost/dfx-base:<hash of its recipe>, reused while the recipe (this script's
# recipe text, the Go version, the CA bundle) is unchanged, and kept between runs.
#
# Then: `buildah bud --isolation chroot --pull=never --format docker` on the Dockerfile
# (docker format keeps the HEALTHCHECK), a container from it (`buildah from`; `podman run`
# cannot set rlimits on these machines), the image's own CMD started in the background and
# its HEALTHCHECK polled until healthy, the kernel checked (gonb, GOEXPERIMENT=simd), and
# scripts/run-notebooks.sh run inside it (check_notebook.py fails on any error output).
# Containers and the built image are removed on exit, whatever happens; the base is kept.
# Needs root (debootstrap, buildah); installs buildah, podman and debootstrap when missing.
# Heavy steps run under `nice -n 10` (DFX_NICE=0 to disable).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"

keep_image=0 base_only=0 notebooks=1 given_image=
while [ $# -gt 0 ]; do
  a="$1"; shift
  case "$a" in
    --image) [ $# -gt 0 ] || { echo "docker-test: --image needs a reference" >&2; exit 2; }
             given_image="$1"; shift ;;
    --keep-image) keep_image=1 ;;
    --base-only) base_only=1 ;;
    --no-notebooks) notebooks=0 ;;
    -h|--help) sed -n '2,28p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "docker-test: unknown argument $a" >&2; exit 2 ;;
  esac
done

say() { printf 'docker-test: %s\n' "$*" >&2; }
step="start"
die() { say "FAILED: $*"; exit 1; }
NICE=(nice -n "${DFX_NICE:-10}")
[ "${DFX_NICE:-10}" = 0 ] && NICE=()
export DEBIAN_FRONTEND=noninteractive
[ -d /usr/local/go/bin ] && export PATH="$PATH:/usr/local/go/bin"

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, buildah --isolation chroot): run it with sudo"
command -v go >/dev/null 2>&1 || die "go not on PATH (its toolchain is copied into the stand-in base)"

# --- clean-up: everything this run made, except the cached base -----------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/dfx-docker-test.XXXXXX")"
containers=() images=()
# Stops a process and its descendants, by their ids.
killtree() {
  local p
  for p in $(pgrep -P "$1" 2>/dev/null); do killtree "$p"; done
  kill "$1" 2>/dev/null
}
cleanup() {
  rc=$?
  set +e
  [ -n "${child:-}" ] && { killtree "$child"; wait "$child" 2>/dev/null; }
  for c in "${containers[@]}"; do
    buildah run --isolation chroot "$c" -- sh -c 'p=$(cat /tmp/dfx-test-jupyter.pid 2>/dev/null) && kill "$p"' >/dev/null 2>&1
    buildah rm "$c" >/dev/null 2>&1
  done
  [ -n "${server_pid:-}" ] && { killtree "$server_pid"; wait "$server_pid" 2>/dev/null; }
  for i in "${images[@]}"; do
    [ "$keep_image" = 1 ] && [ "$i" = localhost/dfx:docker-test ] && continue
    buildah rmi "$i" >/dev/null 2>&1
  done
  rm -rf "$work"
  if [ "$rc" != 0 ]; then say "FAILED during: $step (exit $rc)"; fi
  exit "$rc"
}
trap cleanup EXIT
# Long steps run as a child that the shell waits for, so that a signal reaches the traps at
# once (bash runs a trap only after its foreground command ends) and the child is stopped.
child=
waitfor() {
  "$@" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=
  return "$rc"
}
trap 'exit 130' INT
trap 'exit 143' TERM

# --- tools from Debian ---------------------------------------------------------------------
# apt/dpkg may be locked by another process (unattended upgrades, a parallel set-up): wait.
apt_retry() {
  local i
  for i in $(seq 1 30); do
    if apt-get -o DPkg::Lock::Timeout=60 "$@" </dev/null >"$work/apt.log" 2>&1; then return 0; fi
    if grep -qiE 'lock|Could not get lock|is another process using it' "$work/apt.log"; then
      say "apt is locked by another process; retrying in 10 s ($i/30)"; sleep 10; continue
    fi
    tail -n 20 "$work/apt.log" >&2; return 1
  done
  tail -n 20 "$work/apt.log" >&2; return 1
}
step="installing buildah, podman, debootstrap"
missing=()
for t in buildah podman debootstrap; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} from Debian"
  apt_retry update -q || die "apt-get update failed"
  apt_retry install -y -q --no-install-recommends "${missing[@]}" || die "apt-get install ${missing[*]} failed"
fi

# --- the stand-in base image ----------------------------------------------------------------
step="reading the Dockerfile's FROM lines"
# External FROM names (not earlier stages); all must be the same image.
from_name="$(awk '
  toupper($1) == "FROM" {
    n = 2; while ($n ~ /^--/) n++
    name = $n
    if (!(name in stage)) print name
    if (toupper($(n+1)) == "AS") stage[$(n+2)] = 1
  }' Dockerfile | sort -u)"
[ -n "$from_name" ] || die "no FROM line in Dockerfile"
[ "$(printf '%s\n' "$from_name" | wc -l)" = 1 ] || die "the Dockerfile names several base images: $(echo $from_name)"
case "$from_name" in *'$'*) die "FROM $from_name uses a variable: this script needs a literal name" ;; esac
# The fully qualified name buildah resolves a short Docker Hub name to.
case "$from_name" in
  */*/*) from_full="$from_name" ;;
  */*) from_full="docker.io/$from_name" ;;
  *) from_full="docker.io/library/$from_name" ;;
esac

suite=bookworm
base_packages="g++ gcc libc6-dev make pkg-config git ca-certificates"
ca_bundle=/etc/ssl/certs/ca-certificates.crt
[ -f "$ca_bundle" ] || die "$ca_bundle missing (the build machine's CA bundle goes into the base)"
goroot="$(go env GOROOT)"
gover="$(go env GOVERSION)"
# The recipe: the text of the function below, its parameters, the Go version, the CA bundle.
build_base() {
  local rootfs="$work/rootfs"
  say "debootstrap --variant=minbase $suite (≈ 30 s)"
  waitfor "${NICE[@]}" debootstrap --variant=minbase "$suite" "$rootfs" ${DFX_DEBIAN_MIRROR:-} >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  mkdir -p "$rootfs/usr/local" "$rootfs/go/bin" "$rootfs/go/src"
  chmod -R 1777 "$rootfs/go"
  cp -a "$goroot" "$rootfs/usr/local/go"
  rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
  say "podman import (raw root file system)"
  tar -C "$rootfs" -c . | podman import \
    --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV GOPATH=/go' --change "ENV GOLANG_VERSION=${gover#go}" --change 'WORKDIR /go' \
    --change 'CMD ["bash"]' --quiet - "$raw_tag" >/dev/null
  rm -rf "$rootfs"
  images+=("$raw_tag")
  mkdir -p "$work/base"
  cp "$ca_bundle" "$work/base/ca-certificates.crt"
  cat >"$work/base/Containerfile" <<EOF
FROM $raw_tag
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $base_packages \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
LABEL dfx.base.recipe=$recipe
EOF
  say "adding $base_packages and the CA bundle"
  waitfor "${NICE[@]}" buildah bud --isolation chroot --pull=never --layers=false -q -t "$base_tag" "$work/base" \
    >"$work/base.log" 2>&1 || { tail -n 30 "$work/base.log" >&2; die "building the stand-in base failed"; }
}
recipe="$( { declare -f build_base; echo "$suite|$base_packages|$gover|$from_full"; sha256sum <"$ca_bundle"; } \
  | sha256sum | cut -c1-16)"
raw_tag="localhost/dfx-base-raw:$recipe"
base_tag="localhost/dfx-base:$recipe"

step="building the stand-in base"
t0=$(date +%s)
if buildah inspect --type image "$base_tag" >/dev/null 2>&1; then
  say "stand-in base $base_tag cached"
else
  say "building the stand-in base $base_tag for FROM $from_name"
  build_base
  # Older bases (another recipe) are no longer needed: untag them, then remove every
  # base left without a name (the FROM name moves to the new one below).
  for old in $(buildah images --format '{{.Name}}:{{.Tag}}' | grep -E '^localhost/dfx-base(-raw)?:' || true); do
    [ "$old" = "$base_tag" ] || buildah rmi "$old" >/dev/null 2>&1 || true
  done
  buildah tag "$base_tag" "$from_full"
  for id in $(buildah images --quiet --filter dangling=true --filter label=dfx.base.recipe 2>/dev/null || true); do
    buildah rmi "$id" >/dev/null 2>&1 || true
  done
  say "stand-in base built in $(( $(date +%s) - t0 )) s"
fi
buildah tag "$base_tag" "$from_full"
[ "$base_only" = 1 ] && { say "base ready: $base_tag = $from_full"; exit 0; }

# --- the image -----------------------------------------------------------------------------
step="building the image from the Dockerfile"
if [ -n "$given_image" ]; then
  image="$given_image" build_s="-"
  buildah inspect --type image "$image" >/dev/null 2>&1 || die "no image $image"
else
  # A name of its own, so that two runs on one machine do not collide.
  image="localhost/dfx-docker-test:$$"
  [ "$keep_image" = 1 ] && image="localhost/dfx:docker-test"
  images+=("$image")
  say "buildah bud --isolation chroot --pull=never -t $image . (a few minutes; log: see below on failure)"
  t0=$(date +%s)
  waitfor "${NICE[@]}" buildah bud --isolation chroot --pull=never --format docker --layers=false -t "$image" . \
    >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; die "the image did not build"; }
  build_s=$(( $(date +%s) - t0 ))
fi
size="$(podman image inspect --format '{{.Size}}' "$image")"
if [ -n "$given_image" ]; then say "testing $image: $(( size / 1000000 )) MB ($size bytes)"
else say "image built in ${build_s} s; size $(( size / 1000000 )) MB ($size bytes)"; fi
[ -f "$work/build.log" ] && { grep -i 'warn' "$work/build.log" | grep -vi 'debconf' | head -n 5 \
  | sed 's/^/docker-test: build warning: /' >&2 || true; }

step="inspecting the image"
buildah inspect --type image "$image" >"$work/image.json"
# USER, then the CMD and the HEALTHCHECK test as shell command lines (empty when missing).
{ read -r cfg_user; read -r cmd_sh; read -r health_sh; } < <(/usr/bin/python3 - "$work/image.json" <<'PY'
import json, shlex, sys
c = json.load(open(sys.argv[1]))["Docker"]["config"]
print(c.get("User") or "")
print(" ".join(shlex.quote(a) for a in c.get("Cmd") or []))
t = (c.get("Healthcheck") or {}).get("Test") or []
print(t[1] if t[:1] == ["CMD-SHELL"] else " ".join(shlex.quote(a) for a in t[1:]) if t[:1] == ["CMD"] else "")
PY
)
say "USER=${cfg_user:-root} CMD=$cmd_sh"
[ -n "$cfg_user" ] && [ "$cfg_user" != root ] && [ "$cfg_user" != 0 ] || die "the image runs as root (USER is '${cfg_user}')"
[ -n "$cmd_sh" ] || die "the image has no CMD"
[ -n "$health_sh" ] || die "the image has no HEALTHCHECK (built with --format docker?)"

c="$(buildah from --pull-never "$image")"
containers+=("$c")
brun() { buildah run --isolation chroot "$@"; }

step="checking the image's contents"
# Committed notebooks and figures are in the image, the kernel is installed with GOEXPERIMENT=simd.
{ git ls-files notebooks figures 2>/dev/null || true; } | sort >"$work/expected"
brun "$c" -- sh -c 'cd "$DFX_ROOT" && find notebooks figures -type f' | sort >"$work/present"
missing_files="$(comm -23 "$work/expected" "$work/present" | head -n 5 | tr '\n' ' ')"
[ -z "$missing_files" ] || die "committed files missing from the image: $missing_files"
say "$(wc -l <"$work/expected") committed notebook and figure files present in the image"
brun "$c" -- sh -c 'jupyter kernelspec list --json' >"$work/kernels.json" 2>"$work/kernels.err" || die "jupyter kernelspec list failed in the image"
/usr/bin/python3 - "$work/kernels.json" <<'PY' || die "the gonb kernel is missing or lacks GOEXPERIMENT=simd"
import json, sys
k = json.load(open(sys.argv[1]))["kernelspecs"]
env = k["gonb"]["spec"].get("env", {})
assert env.get("GOEXPERIMENT") == "simd", env
print("docker-test: kernel gonb at %s, env %s" % (k["gonb"]["resource_dir"], env), file=sys.stderr)
PY

# --- the image's CMD and HEALTHCHECK, as a container engine would run them -------------------
step="starting Jupyter (the image's CMD) and polling its HEALTHCHECK"
port="${DFX_TEST_PORT:-$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
brun -e JUPYTER_PORT="$port" -e JUPYTER_TOKEN=dfx-docker-test "$c" -- \
  sh -c "echo \$\$ >/tmp/dfx-test-jupyter.pid; exec $cmd_sh" >"$work/jupyter.log" 2>&1 </dev/null &
server_pid=$!
# Polled until it passes or the server ends, for up to 15 min (DFX_TEST_WAIT: seconds, or 30m):
# a loaded machine starts Jupyter slowly, it does not fail.
healthy=0 t0=$SECONDS limit=900
if [ -n "${DFX_TEST_WAIT:-}" ]; then
  [[ "$DFX_TEST_WAIT" =~ ^([0-9]+)(h|m|s)?$ ]] || die "DFX_TEST_WAIT=$DFX_TEST_WAIT: want seconds or a duration such as 15m"
  unit=1
  case "${BASH_REMATCH[2]}" in h) unit=3600 ;; m) unit=60 ;; esac
  limit=$(( 10#${BASH_REMATCH[1]} * unit ))
fi
while [ $(( SECONDS - t0 )) -le "$limit" ]; do
  if brun -e JUPYTER_PORT="$port" "$c" -- sh -c "$health_sh" >/dev/null 2>&1; then healthy=1; break; fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 1
done
if [ "$healthy" != 1 ]; then
  tail -n 20 "$work/jupyter.log" >&2
  if kill -0 "$server_pid" 2>/dev/null; then die "waited $(( SECONDS - t0 )) s for the HEALTHCHECK to pass (port $port)"; fi
  die "Jupyter ended before its HEALTHCHECK passed (port $port)"
fi
say "Jupyter up on 127.0.0.1:$port after ≈ $(( SECONDS - t0 )) s; HEALTHCHECK passes"
# The server lists the gonb kernel (through its REST API, with the token).
/usr/bin/python3 - "$port" <<'PY' || die "the Jupyter server in the image does not list the gonb kernel"
import json, sys, urllib.request
r = urllib.request.urlopen("http://127.0.0.1:%s/api/kernelspecs?token=dfx-docker-test" % sys.argv[1], timeout=300)
specs = json.load(r)["kernelspecs"]
assert "gonb" in specs, list(specs)
PY
brun "$c" -- sh -c 'kill "$(cat /tmp/dfx-test-jupyter.pid)"' >/dev/null 2>&1 || true
wait "$server_pid" 2>/dev/null || true
server_pid=

# --- the notebooks ---------------------------------------------------------------------------
if [ "$notebooks" = 1 ]; then
  step="running the notebooks inside the image"
  # GOPROXY=off: the image must hold every module the notebooks need (no network at run time).
  say "scripts/run-notebooks.sh (quick profile) inside the image, GOPROXY=off"
  t0=$(date +%s)
  nb_run() {
    "${NICE[@]}" buildah run --isolation chroot -e GOPROXY=off "$c" -- \
      sh -c 'mkdir -p /tmp/nb && TMPDIR=/tmp/nb exec "$DFX_ROOT/scripts/run-notebooks.sh" --keep' 2>&1 </dev/null \
      | tee "$work/notebooks.log"
  }
  waitfor nb_run || die "notebooks failed inside the image"
  nb_s=$(( $(date +%s) - t0 ))
  # Per-cell times of the first notebook (nbclient records them): the first Go cell pays
  # for whatever the image's build cache lacks.
  brun "$c" -- /usr/bin/python3 -c '
import datetime, glob, json
nbs = sorted(glob.glob("/tmp/nb/dfx-notebooks.*/*.ipynb"))
nb = json.load(open(nbs[0]))
def ts(s): return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
out = []
for c in nb["cells"]:
    e = c.get("metadata", {}).get("execution", {})
    if c["cell_type"] == "code" and "iopub.execute_input" in e and "shell.execute_reply" in e:
        out.append("%.1f" % (ts(e["shell.execute_reply"]) - ts(e["iopub.execute_input"])).total_seconds())
print("docker-test: %s cell times (s): %s" % (nbs[0].rsplit("/", 1)[1], " ".join(out)))
' >&2 || true
  say "notebooks passed inside the image in ${nb_s} s"
fi
step="done"
if [ -n "$given_image" ]; then say "OK: image $image, $(( size / 1000000 )) MB"
else say "OK: image $(( size / 1000000 )) MB, built in ${build_s} s"; fi
