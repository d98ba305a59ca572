# dfx with Jupyter + GoNB (docs/docker.md has the Podman and buildah commands):
#   docker build -t dfx . && docker run --rm -p 8888:8888 dfx
# then open the printed http://127.0.0.1:8888/?token=… URL; notebooks/ is the working folder.
# GPU variant (GoMLX's XLA backend through the PJRT CUDA plugin; untested, no GPU was at hand):
#   docker build --build-arg DFX_GPU=1 -t dfx-gpu . && docker run --rm --gpus all -p 8888:8888 dfx-gpu
# The set-up is scripts/setup.sh, the script `make setup` runs; `make docker-test`
# (scripts/docker-test.sh) builds this file and runs every notebook inside the image.

# --- Stage 1: GoNB, goimports and gopls. Only their binaries (61 MB) move on: the module
# sources and the build cache their builds leave (several hundred MB) stay in this stage.
FROM golang:1.26-bookworm AS tools
COPY scripts/setup.sh /tmp/setup.sh
RUN /tmp/setup.sh --go-tools-only

# --- Stage 2: the image.
FROM golang:1.26-bookworm

# DFX_GPU=1: also install JAX's PJRT CUDA plugin (pip, from PyPI) in /opt/pjrt, linked as
# scripts/gpu-xla.sh does, and make the notebook kernel build with -tags xla and use it.
ARG DFX_GPU=
# What pip installs for DFX_GPU=1 (the plugin and the CUDA libraries it loads).
ARG DFX_PJRT_PIP="jax[cuda13]"

# Jupyter from Debian (as root), then the user who runs it. OpenBLAS and NumPy (only for
# `make bench`) are left out.
COPY scripts/setup.sh scripts/gpu-xla.sh /tmp/dfx-setup/
RUN /tmp/dfx-setup/setup.sh --apt-only --no-blas --no-browser \
 && if [ -n "$DFX_GPU" ]; then \
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv \
      && python3 -m venv /opt/pjrt \
      && /opt/pjrt/bin/pip install --no-cache-dir "$DFX_PJRT_PIP" \
      && PYTHON=/opt/pjrt/bin/python DFX_PJRT_DIR=/opt/pjrt /tmp/dfx-setup/gpu-xla.sh true; \
    fi \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /tmp/dfx-setup \
 && useradd --create-home --uid 1000 --shell /bin/bash dfx \
 && install -d -o dfx -g dfx /dfx

COPY --from=tools --chown=dfx:dfx /go/bin/ /go/bin/

USER dfx
ENV DFX_ROOT=/dfx \
    GOEXPERIMENT=simd \
    JUPYTER_PORT=8888
WORKDIR /dfx

# The gonb kernel for this user, with GOEXPERIMENT=simd in its environment (setup.sh finds
# Jupyter and the Go tools present and only installs the kernel; DFX_GPU=1 adds the XLA settings).
COPY --chown=dfx:dfx scripts/ scripts/
RUN if [ -n "$DFX_GPU" ]; then export DFX_KERNEL_ENV="GOFLAGS=-tags=xla GOMLX_BACKEND=xla:cuda \
      GOMLX_NO_AUTO_INSTALL=1 PJRT_PLUGIN_LIBRARY_PATH=/opt/pjrt/lib"; fi \
 && scripts/setup.sh --no-blas --no-browser

# The sources, the committed notebooks (with their outputs) and figures. Then what a notebook's
# first cells do, once: a module in a go.work that uses /dfx, `go get` of the pinned GoNB, and a
# build of every dfx package and gonbui as the kernel builds them (cgo on, GOEXPERIMENT=simd,
# the workspace's module versions, which are not go.mod's alone: GoNB's requirements raise
# some). The module and build caches then hold what the notebooks need: their first Go cell
# does not recompile GoMLX, and they run without network. The module zips are dropped (builds
# read the extracted sources; go.sum checks use the kept .ziphash files). No separate
# `go mod download` layer: it would keep a second set of versions in the image.
COPY --chown=dfx:dfx . .
RUN tags=$([ -n "$DFX_GPU" ] && echo -tags=xla || true) \
 && d="$(mktemp -d)" && cd "$d" && go mod init gonb_warmup >/dev/null 2>&1 && go work init && go work use . /dfx \
 && go get github.com/janpfeifer/gonb@v0.11.5 \
 && go build $tags github.com/dfx-lab/dfx/... github.com/janpfeifer/gonb/gonbui \
 && cd / && rm -rf "$d" && find "$(go env GOMODCACHE)/cache/download" -name '*.zip' -delete

WORKDIR /dfx/notebooks
EXPOSE 8888
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["/usr/bin/python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/api' % os.environ.get('JUPYTER_PORT', '8888'), timeout=4)"]
CMD ["sh", "-c", "exec jupyter notebook --ip=0.0.0.0 --port=\"${JUPYTER_PORT:-8888}\" --no-browser"]
