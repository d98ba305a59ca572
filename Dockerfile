# dfx with Jupyter + GoNB: docker build -t dfx . && docker run --rm -p 8888:8888 dfx
# then open the printed http://127.0.0.1:8888/?token=… URL; notebooks/ is the working folder.
# The set-up is the same script `make setup` runs (scripts/setup.sh).
FROM golang:1.26-bookworm

ENV DEBIAN_FRONTEND=noninteractive \
    PATH=/root/go/bin:/usr/local/go/bin:$PATH \
    DFX_ROOT=/dfx \
    GOEXPERIMENT=simd

WORKDIR /dfx

# Module dependencies first, so they stay cached while the sources change.
COPY go.mod go.sum ./
RUN go mod download

# Jupyter (Debian packages), GoNB v0.11.5 with its kernel, goimports, gopls.
COPY Makefile ./
COPY scripts/ scripts/
RUN make setup && rm -rf /var/lib/apt/lists/*

COPY . .
RUN CGO_ENABLED=0 go build ./...

WORKDIR /dfx/notebooks
EXPOSE 8888
CMD ["jupyter", "notebook", "--ip=0.0.0.0", "--port=8888", "--no-browser", "--allow-root"]
