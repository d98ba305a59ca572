#!/usr/bin/python3
"""bench_torch_eps.py — a PyTorch (Debian's python3-torch 1.13, CPU) twin of the
committed MNIST ε-network (mnist/checkpoints/eps.dfxckpt), for
scripts/bench-torch-eps.sh: the same architecture, shapes and weights, computing
the same function, with the mixture skip in float64 (--skip-dtype float32 for
the checkpoint's own precision) and the patch-network residual in float32.

  ε̂(x, t) = ε_mix(x, t) + r_θ(x, x̂₀, t),  x̂₀ = (x − σ ε_mix)/α,  null class.

ε_mix (models.MixtureEps) with every row at one time t (the shared-t path):
C_k = α²Σ_k + σ²I, Σ_k = U_k diag(λ_k) U_kᵀ + ρ_k (rest) + ν_k (idle pixels);
the t-dependent factors 1/c = 1/(α²λ + σ²), 1/c⊥, 1/c_S and log-determinants are
per component, computed once a call; per row: z = x'U − α U_kᵀμ'_k [B, K·r]
(one product with the side-by-side bases U [d, K·r]), ‖D_k‖² and the idle parts
by products with the means and idle masks [K, d], the responsibilities r_k
(softmax of the log-likelihoods and the null class's log-weights), and
ε_mix = σ (U·[r_k z_k (1/c_k − 1/c⊥_k)] + Σ_k r_k/c⊥_k D_k + Σ_k r_k(1/c_S,k −
1/c⊥_k) M_k∘D_k): two products with U, six with the [K, d] tables.

r_θ (models.PatchNet): the input Dense over each 4×4 patch's 12×12 window of
[c_in x, x̂₀] is a stride-4 convolution (kernel 12, padding 4) with the
checkpoint's input weights permuted into F.conv2d's layout; a learned position
table; per block LN(h)(1 + γ) + β (FiLM from the embedding of λ = log σ/α and
the null class, once a call), Dense, SiLU, Dense, residual; output
Dense(SiLU(LN(h))) back to the patches' pixels.

Modes (run with /usr/bin/python3):
  --check FIXTURE        the twin's ε̂, ε_mix and VJP on the fixture's rows at
                         three times against the Go values there (written by
                         DFX_EPS_TWIN_FIXTURE=FIXTURE go test ./mnist -run
                         TestEpsTwinFixture); exit 1 beyond tolerance
  --bench FIXTURE        time the cases on the Go benchmark's own inputs (the
                         fixture's batch): eps/B=<1|64>/{forward,skip,vjp};
                         "RESULT name=… ms=…" lines
  --machine              this machine's limits: PyTorch's f32/f64 1024³ product
                         rates and the copy bandwidth; "RATE …" lines
  --table ROWS           the table from bench-torch-eps.sh's rows file
Weights are read from --ckpt (default mnist/checkpoints/eps.dfxckpt) by a strict
reader of the dfx format (models/checkpoint: magic, version 3, bounded JSON
header, every size against the bytes present, SHA-256).
"""
import argparse
import hashlib
import json
import math
import os
import statistics
import struct
import sys
import time

MAGIC, VERSION, MAX_HEADER, MAX_RANK = b"DFXCKPT\x00", 3, 16 << 20, 8
DTYPES = {"Float32": ("<f4", 4), "Float64": ("<f8", 8), "Int32": ("<i4", 4), "Int64": ("<i8", 8),
          "Uint32": ("<u4", 4), "Uint64": ("<u8", 8)}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    print("bench_torch_eps: " + msg, file=sys.stderr)
    sys.exit(2)


def read_header(path):
    """The checkpoint's JSON header and the offset of its data, size-checked."""
    with open(path, "rb") as f:
        head = f.read(16)
        if len(head) != 16 or head[:8] != MAGIC:
            fail("%s: not a dfx checkpoint" % path)
        version, hlen = struct.unpack("<II", head[8:])
        if version != VERSION or hlen > MAX_HEADER:
            fail("%s: version %d, header %d bytes (want version %d, ≤ %d)" % (path, version, hlen, VERSION, MAX_HEADER))
        raw = f.read(hlen)
    if len(raw) != hlen:
        fail("%s: truncated header" % path)
    header = json.loads(raw)
    total = 0
    for v in header.get("Variables", []):
        dims = v.get("Dims")
        if v.get("DType") not in DTYPES or not isinstance(dims, list) or len(dims) > MAX_RANK or \
                any(not isinstance(n, int) or n < 0 for n in dims):
            fail("%s: variable %r malformed" % (path, v.get("Path")))
        total += math.prod(dims) * DTYPES[v["DType"]][1]
    if os.path.getsize(path) != 16 + hlen + total + 32:
        fail("%s: %d bytes, the header describes %d" % (path, os.path.getsize(path), 16 + hlen + total + 32))
    return header, 16 + hlen


def read_checkpoint(path):
    """(header, {path: numpy array}) of a dfx checkpoint, checksum verified."""
    import numpy as np
    header, off = read_header(path)
    with open(path, "rb") as f:
        data = f.read()
    if hashlib.sha256(data[:-32]).digest() != data[-32:]:
        fail("%s: checksum mismatch" % path)
    arrays = {}
    for v in header["Variables"]:
        dt, size = DTYPES[v["DType"]]
        n = math.prod(v["Dims"])
        a = np.frombuffer(data, dtype=dt, count=n, offset=off).reshape(v["Dims"])
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            fail("%s: %s is not finite" % (path, v["Path"]))
        arrays[v["Path"]], off = a, off + n * size
    return header, arrays


def params_of(header):
    """The header's hyperparameters, decoded from their "type:value" strings."""
    conv = {"int": int, "float64": float, "string": str, "bool": lambda b: b == "true"}
    params = {}
    for k, s in header["Params"].items():
        typ, _, val = s.partition(":")
        if typ not in conv:
            fail("parameter %s of type %r" % (k, typ))
        params[k] = conv[typ](val)
    return params


def shapes(header):
    """The network's sizes from the header's dimension and hyperparameters (the
    score scope's win over the root's)."""
    params = params_of(header)
    p = lambda k, d: params.get("/score/" + k, params.get("/" + k, d))
    return dict(d=header["Dim"], K=p("mixture_components", 0), r=p("mixture_rank", 0), nc=p("num_classes", 0),
                width=p("width", 128), depth=p("depth", 3), patch=p("patch", 4), halo=p("patch_halo", 1),
                emb=p("embed_width", p("width", 128)), edim=p("embed_dim", 32), fmax=p("embed_max_freq", 8.0))


class EpsTwin:
    """The committed ε-network in PyTorch (see the module's docstring)."""

    def __init__(self, header, arrays, skip_dtype):
        import torch
        params = params_of(header)
        self.torch, self.s = torch, shapes(header)
        s, sd, f32 = self.s, skip_dtype, torch.float32
        if params.get("/skip") != "mixture" or params.get("/score/arch") != "patch" or s["halo"] != 1:
            fail("the twin covers a mixture skip + patch network (halo 1) only")
        self.check_dims(arrays)
        t = lambda name, dt: torch.from_numpy(arrays[name].copy()).to(dt)
        m = "/mixture/"
        self.basis = t(m + "basis", sd)                          # U [d, K·r]
        self.basis_t = self.basis.t().contiguous()               # Uᵀ for the back-projection
        self.centre, self.proj, self.lam = t(m + "centre", sd), t(m + "means_proj", sd), t(m + "lambda", sd)
        self.means, idle = t(m + "means", sd), t(m + "idle", sd)
        self.idle, self.idle_means = idle, idle * self.means     # M_k, M_k∘μ'_k [K, d]
        self.means_t, self.idle_t, self.idle_means_t = (a.t().contiguous() for a in (self.means, idle, self.idle_means))
        self.mu2 = (self.means ** 2).sum(-1)                    # ‖μ'_k‖²
        self.mu2_idle = (self.idle_means * self.means).sum(-1)   # ‖M_k∘μ'_k‖²
        self.rho, self.nu = t(m + "rho", sd), t(m + "idle_var", sd)
        self.n_rest, self.n_idle = t(m + "rest_dim", sd), t(m + "idle_dim", sd)
        self.prior = t(m + "log_weights", sd)[s["nc"]]           # the null class's row
        self.skip_dtype = sd
        w = lambda name: t("/score/" + name, f32)
        p, side = s["patch"], int(round(math.sqrt(s["d"])))
        win = (2 * s["halo"] + 1) * p
        # Dense over [windows(c_in x), windows(x̂₀)] → conv2d weight [W, 2, win, win]:
        # feature (di·3 + dj)·P² + py·P + px of a channel is pixel (di·P + py, dj·P + px).
        wi = w("input/weights_t").reshape(s["width"], 2, 2 * s["halo"] + 1, 2 * s["halo"] + 1, p, p)
        self.conv_w = wi.permute(0, 1, 2, 4, 3, 5).reshape(s["width"], 2, win, win).contiguous()
        self.conv_b = w("input/biases").reshape(-1)
        self.side, self.grid = side, side // p
        self.pos = w("position/table")
        self.embed = (w("embed/weights_t"), w("embed/biases").reshape(-1))
        self.cls = w("class/table")[s["nc"]]
        self.blocks = [tuple(w("block_%d/%s" % (i, n)) if n.endswith("t") else w("block_%d/%s" % (i, n)).reshape(-1)
                             for n in ("film/weights_t", "film/biases", "dense1/weights_t", "dense1/biases",
                                       "dense2/weights_t", "dense2/biases")) for i in range(s["depth"])]
        self.out = (w("output/weights_t"), w("output/biases").reshape(-1))
        n = max(s["edim"] // 2, 1)
        self.freqs = torch.tensor([s["fmax"] ** (k / max(n - 1, 1)) for k in range(n)], dtype=torch.float64)

    def check_dims(self, arrays):
        """Fails unless the variables the twin reads have the shapes its sizes imply."""
        s = self.s
        d, k, kr, w, p2 = s["d"], s["K"], s["K"] * s["r"], s["width"], s["patch"] ** 2
        n = (int(round(math.sqrt(d))) // s["patch"]) ** 2
        want = {"/mixture/basis": [d, kr], "/mixture/centre": [d], "/mixture/means": [k, d], "/mixture/idle": [k, d],
                "/mixture/means_proj": [kr], "/mixture/lambda": [kr], "/mixture/rho": [k], "/mixture/idle_var": [k],
                "/mixture/rest_dim": [k], "/mixture/idle_dim": [k], "/mixture/log_weights": [s["nc"] + 1, k],
                "/score/input/weights_t": [w, 2 * (2 * s["halo"] + 1) ** 2 * p2], "/score/position/table": [1, n, w],
                "/score/embed/weights_t": [s["emb"], 2 * (s["edim"] // 2) + 1], "/score/class/table": [s["nc"] + 1, s["emb"]],
                "/score/output/weights_t": [p2, w]}
        for i in range(s["depth"]):
            want.update({"/score/block_%d/film/weights_t" % i: [2 * w, s["emb"]], "/score/block_%d/dense1/weights_t" % i: [w, w],
                         "/score/block_%d/dense2/weights_t" % i: [w, w]})
        for path, dims in want.items():
            if path not in arrays or list(arrays[path].shape) != dims:
                fail("checkpoint variable %s: %s, the twin needs %s" % (path, list(arrays[path].shape) if path in arrays else "missing", dims))

    def skip(self, x, alpha, sigma):
        """ε_mix [B, d] (skip dtype) for rows x at one time."""
        torch = self.torch
        s = self.s
        a2, s2 = alpha * alpha, sigma * sigma
        c = a2 * self.lam + s2                                   # [K·r], once a call
        inv_c = 1 / c
        c_rest, c_idle = a2 * self.rho + s2, a2 * self.nu + s2   # [K]
        inv_rest = (self.n_rest > 0).to(c.dtype) / c_rest
        inv_idle = 1 / c_idle
        logdet = torch.log(c).reshape(s["K"], s["r"]).sum(-1) + self.n_rest * torch.log(c_rest) + self.n_idle * torch.log(c_idle)
        xc = x - alpha * self.centre                             # x' [B, d]
        z = xc @ self.basis - alpha * self.proj                  # [B, K·r]
        zsq = z * z
        maha = (zsq * inv_c).reshape(-1, s["K"], s["r"]).sum(-1)
        zz = zsq.reshape(-1, s["K"], s["r"]).sum(-1)
        xm = xc @ self.means_t                                   # x'·μ'_k [B, K]
        d_all = (xc * xc).sum(-1, keepdim=True) - 2 * alpha * xm + a2 * self.mu2
        d_idle = (xc * xc) @ self.idle_t - 2 * alpha * (xc @ self.idle_means_t) + a2 * self.mu2_idle
        rest = torch.clamp(d_all - zz - d_idle, min=0)
        loglik = -0.5 * (maha + rest * inv_rest + d_idle * inv_idle + logdet)
        resp = torch.softmax(loglik + self.prior, -1)            # [B, K]
        coef = (z.reshape(-1, s["K"], s["r"]) * (inv_c.reshape(s["K"], s["r"]) - inv_rest[:, None]) * resp[..., None])
        out = coef.reshape(-1, s["K"] * s["r"]) @ self.basis_t
        wr, wi = resp * inv_rest, resp * (inv_idle - inv_rest)
        out = out + xc * wr.sum(-1, keepdim=True) - alpha * (wr @ self.means) + xc * (wi @ self.idle) - alpha * (wi @ self.idle_means)
        return sigma * out

    def residual(self, x, y0, alpha, sigma):
        """r_θ [B, d] in float32 for rows x and the skip's x̂₀ at one time."""
        torch, F = self.torch, self.torch.nn.functional
        s, b, side, grid, p = self.s, x.shape[0], self.side, self.grid, self.s["patch"]
        lam = torch.log(torch.tensor([[sigma / alpha]], dtype=torch.float64))
        fe = torch.cat([lam, torch.sin(lam * self.freqs), torch.cos(lam * self.freqs)], -1).float()
        emb = F.silu(F.linear(fe, *self.embed) + self.cls)      # [1, E], once a call
        c_in = 1 / math.sqrt(alpha * alpha + sigma * sigma)
        img = torch.stack([(x * c_in).float(), y0.float()], 1).reshape(b, 2, side, side)
        h = F.conv2d(img, self.conv_w, self.conv_b, stride=p, padding=s["halo"] * p)  # [B, W, g, g]
        h = h.flatten(2).transpose(1, 2) + self.pos             # [B, n, W]
        width = s["width"]
        for fw, fb, w1, b1, w2, b2 in self.blocks:
            film = F.linear(emb, fw, fb)
            gamma, beta = film[:, None, :width], film[:, None, width:]
            u = F.layer_norm(h, (width,), eps=1e-5) * (1 + gamma) + beta
            h = h + F.linear(F.silu(F.linear(u, w1, b1)), w2, b2)
        out = F.linear(F.silu(F.layer_norm(h, (width,), eps=1e-5)), *self.out)  # [B, n, P²]
        return out.reshape(b, grid, grid, p, p).permute(0, 1, 3, 2, 4).reshape(b, side * side)

    def eps(self, x, alpha, sigma):
        """ε̂ [B, d] (float64) and ε_mix for rows x (float64) at one time."""
        xs = x.to(self.skip_dtype)
        skip = self.skip(xs, alpha, sigma)
        y0 = (xs - sigma * skip) / alpha
        return skip.double() + self.residual(x, y0, alpha, sigma).double(), skip

    def vjp(self, x, v, alpha, sigma):
        """(1/σ) ∂⟨ε̂(x), v⟩/∂x [B, d], row-wise (access.VJPMatVec)."""
        x = x.detach().requires_grad_(True)
        e, _ = self.eps(x, alpha, sigma)
        return self.torch.autograd.grad((e * v).sum(), x)[0] / sigma


def load_fixture(path):
    with open(path) as f:
        fx = json.load(f)
    d = fx["Dim"]
    for c in [fx["Bench"]] + fx["Check"]:
        for k in ("X", "V", "Eps", "Skip", "VJP"):
            if c.get(k) is not None and len(c[k]) != c["Rows"] * d:
                fail("%s: %s of %d values, want %d" % (path, k, len(c[k]), c["Rows"] * d))
    return fx


def check(twin, fx, tol):
    """Relative errors ‖twin − Go‖/‖Go‖ of ε̂, ε_mix and the VJP at each time."""
    torch = twin.torch
    worst = 0.0
    for c in fx["Check"]:
        m = lambda k: torch.tensor(c[k], dtype=torch.float64).reshape(c["Rows"], fx["Dim"])
        x, v = m("X"), m("V")
        with torch.no_grad():
            eps, skip = twin.eps(x, c["Alpha"], c["Sigma"])
        jv = twin.vjp(x, v, c["Alpha"], c["Sigma"])
        errs = []
        for name, got, want in (("eps", eps, m("Eps")), ("skip", skip.double(), m("Skip")), ("vjp", jv, m("VJP"))):
            e = float((got - want).norm() / want.norm())
            errs.append("%s %.2e" % (name, e))
            worst = max(worst, e)
        print("check t=%g (%d rows, alpha %.4f, sigma %.4f): relative error vs Go: %s" % (
            c["T"], c["Rows"], c["Alpha"], c["Sigma"], ", ".join(errs)))
    print("check: worst %.2e, tolerance %.0e: %s" % (worst, tol, "ok" if worst <= tol else "FAIL"))
    return worst <= tol


def time_call(fn, warmup, repeats, min_time):
    """Median and min over repeats of the mean wall time of one call, the
    median of its process CPU time (all threads; ms), and the calls a repeat."""
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    inner = max(1, int(min_time / one))
    per, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(inner):
            fn()
        per.append((time.perf_counter() - t0) / inner * 1e3)
        cpu.append((time.process_time() - c0) / inner * 1e3)
    return statistics.median(per), min(per), inner, statistics.median(cpu)


def bench(twin, fx, args):
    torch = twin.torch
    c = fx["Bench"]
    X = torch.tensor(c["X"], dtype=torch.float64).reshape(c["Rows"], fx["Dim"])
    V = torch.tensor(c["V"], dtype=torch.float64).reshape(c["Rows"], fx["Dim"])
    a, s = c["Alpha"], c["Sigma"]
    for b in (1, c["Rows"]):
        x, v = X[:b].contiguous(), V[:b].contiguous()

        def forward():
            with torch.no_grad():
                twin.eps(x, a, s)

        def skip():
            with torch.no_grad():
                twin.skip(x.to(twin.skip_dtype), a, s)

        for mode, fn in (("forward", forward), ("skip", skip), ("vjp", lambda: twin.vjp(x, v, a, s))):
            ms, mn, inner, cpu = time_call(fn, args.warmup, args.repeats, args.min_time)
            print("RESULT name=eps/B=%d/%s ms=%.4f min_ms=%.4f inner=%d cpu_ms=%.4f" % (b, mode, ms, mn, inner, cpu), flush=True)


def machine(args):
    """PyTorch's 1024³ product rate in f32 and f64 and the copy bandwidth (a
    numpy copy, one thread, and torch's copy_ at --threads) of 256 MB arrays,
    each from the fastest of its repeats (the machine's limit, not its load)."""
    import numpy as np
    import torch
    for dt in ("float32", "float64"):
        a, b = torch.randn(1024, 1024, dtype=getattr(torch, dt)), torch.randn(1024, 1024, dtype=getattr(torch, dt))
        _, ms, _, _ = time_call(lambda: a @ b, 1, 10, 0.05)
        print("RATE name=gemm-%s threads=%d value=%.1f (GFLOP/s, 1024^3 product %.2f ms)" % (dt, args.threads, 2 * 1024 ** 3 / ms / 1e6, ms))
    n = 256 << 20
    src, dst = np.ones(n // 8), np.empty(n // 8)
    _, ms, _, _ = time_call(lambda: np.copyto(dst, src), 1, 5, 0.1)
    print("RATE name=copy-numpy threads=1 value=%.1f (GB/s read+written, 256 MB copy %.1f ms)" % (2 * n / ms / 1e6, ms))
    ts, td = torch.ones(n // 8, dtype=torch.float64), torch.empty(n // 8, dtype=torch.float64)
    _, ms, _, _ = time_call(lambda: td.copy_(ts), 1, 5, 0.1)
    print("RATE name=copy-torch threads=%d value=%.1f (GB/s read+written, 256 MB copy %.1f ms)" % (args.threads, 2 * n / ms / 1e6, ms))


def costs(s, batch, mode, skip_bytes):
    """(skip FLOPs, residual FLOPs, bytes of operands read) of the dense
    computation of one case: every product counted at 2mnk, the basis read
    by both of its products (before and after the softmax), each [K, d] table
    by its two products, every residual weight once; the VJP twice the
    forward (its backward pass repeats each product against its input, not
    its weights, and reads every operand again)."""
    d, kr, k, w, dep = s["d"], s["K"] * s["r"], s["K"], s["width"], s["depth"]
    p2, n = s["patch"] ** 2, (int(round(math.sqrt(d))) // s["patch"]) ** 2
    feats = 2 * (2 * s["halo"] + 1) ** 2 * p2
    skip_flops = batch * (2 * 2 * d * kr + 6 * 2 * d * k)
    skip_mem = (2 * d * kr + 6 * k * d) * skip_bytes
    res_w = feats * w + dep * 2 * w * w + w * p2                 # the per-patch products' weights
    res_flops = 2 * batch * n * res_w + 2 * dep * s["emb"] * 2 * w
    res_mem = 4 * (res_w + n * w + dep * s["emb"] * 2 * w + (s["nc"] + 1) * s["emb"] + (2 * (s["edim"] // 2) + 1) * s["emb"])
    if mode == "skip":
        res_flops, res_mem = 0, 0
    times = 2 if mode == "vjp" else 1
    return times * skip_flops, times * res_flops, times * (skip_mem + res_mem)


def median(v):
    return statistics.median(v) if v else None


def fmt(x):
    return "-" if x is None else ("%.3f" % x if x < 10 else ("%.2f" % x if x < 100 else "%.1f" % x))


def ratio(a, b):
    return "-" if a is None or not b else "%.2fx" % (a / b)


def timings(rows, cases, go, pts, unit):
    """One table: Go's median per case, and each PyTorch column's with Go's ratio to it."""
    print("%-20s %9s" % ("case", "Go " + unit) + "".join(" %12s %8s" % ("PT " + k.split("pt-")[1] + " " + unit, "Go/PT") for k in pts))
    for c in cases:
        g = median(rows.get(go, {}).get(c, []))
        print("%-20s %9s" % (c, fmt(g)) + "".join(" %12s %8s" % (fmt(median(rows.get(k, {}).get(c, []))),
                                                                  ratio(g, median(rows.get(k, {}).get(c, [])))) for k in pts))


def read_rows(path):
    """The rows file of a bench-torch script: {source: {case: [ms, …]}} and the best of
    each machine rate {name: value}."""
    rows, rates = {}, {}
    with open(path) as f:
        for line in f:
            src, name, val = line.rstrip("\n").split("\t")
            if src.startswith("rate:"):
                rates[name] = max(rates.get(name, 0.0), float(val))
            else:
                rows.setdefault(src, {}).setdefault(name, []).append(float(val))
    return rows, rates


def table(args):
    """Go and PyTorch medians per case, their ratio, and each case's lower
    bounds from this run's measured rates."""
    rows, rates = read_rows(args.table)
    s = shapes(read_header(args.ckpt)[0])
    srcs = ["go"] + sorted((k for k in rows if k.startswith("pt-")), key=lambda k: (k.split("/")[1] != "f64", -int(k.split("/")[0][3:].rstrip("p")), k))
    cases = sorted({c for r in rows.values() for c in r}, key=lambda c: (int(c.split("=")[1].split("/")[0]), c.split("/")[-1]))
    timings(rows, cases, "go", srcs[1:], "ms")
    print()
    print("Process CPU time per call (ms; Go: cpu-ns/op, both cores; PyTorch: time.process_time, every thread, spinning "
          "included): steadier than the wall clock while other jobs share the cores.")
    timings(rows, cases, "go-cpu", ["cpu-" + k for k in srcs[1:]], "cpu")
    r32, r64 = rates.get("gemm-float32"), rates.get("gemm-float64")
    bw = max(rates.get("copy-numpy", 0), rates.get("copy-torch", 0)) or None
    print()
    if not (r32 and r64 and bw):
        print("lower bounds: no machine rates measured (--machine)")
        return 0
    print("Lower bounds of the dense computation on this machine (the best of this run's measurements): arithmetic = FLOPs / "
          "PyTorch's 1024^3 product rate (f32 %.0f, f64 %.0f GFLOP/s); memory = bytes of the products' operands / the copy "
          "bandwidth (%.1f GB/s read+written, the best of a numpy and a torch copy of 256 MB); bound = max of the two. "
          "FLOPs: the two basis products 2·2·B·d·K·r, six products with the [K, d] tables 6·2·B·d·K, the residual's products "
          "2·B·n·(F·W + depth·2W² + W·P²), the FiLM once a call; bytes: the basis twice (before and after the softmax), "
          "each table twice, every residual weight once; the VJP twice the forward. 'f32' reads the skip in float32 (the "
          "checkpoint's precision; Go computes in it), 'f64' in float64 (the twin's default). Go/bound: Go's median over the f32 "
          "bound; PT64/bnd, PT32/bnd: the fastest PyTorch column of that skip dtype over its bound. A ratio under 1 means the "
          "rates were measured under a heavier load than the case." % (r32, r64, bw))
    pt = {dt: [k for k in srcs[1:] if k.endswith(dt)] for dt in ("f64", "f32")}
    print("%-20s %8s %8s %9s %9s %9s %9s %9s %9s %9s %9s" % ("case", "GFLOP", "MB f32", "arith f32", "mem f32", "Go/bound",
                                                            "MB f64", "arith f64", "mem f64", "PT64/bnd", "PT32/bnd"))
    for c in cases:
        b, mode = int(c.split("=")[1].split("/")[0]), c.split("/")[-1]
        best = lambda ks: min((median(rows[k].get(c, [])) for k in ks if rows[k].get(c)), default=None)
        out = []
        for nbytes, rs in ((4, r32), (8, r64)):
            fs, fr, mem = costs(s, b, mode, nbytes)
            arith = (fs / rs + fr / r32) / 1e6
            out.append((fs + fr, mem, arith, mem / bw / 1e6, max(arith, mem / bw / 1e6)))
        (fl, m32, a32, mm32, b32), (_, m64, a64, mm64, b64) = out
        print("%-20s %8.3f %8.1f %9s %9s %9s %8.1f %9s %9s %9s %9s" % (
            c, fl / 1e9, m32 / 1e6, fmt(a32), fmt(mm32), ratio(median(rows.get("go", {}).get(c, [])), b32), m64 / 1e6,
            fmt(a64), fmt(mm64), ratio(best(pt["f64"]), b64), ratio(best(pt["f32"]), b32)))
    return 0


def mode_args(ap):
    """The flags of the modes every twin has: --check, --bench, --table and the timing's."""
    ap.add_argument("--check", metavar="FIXTURE")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--bench", metavar="FIXTURE")
    ap.add_argument("--table", metavar="ROWS")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", default=os.path.join(ROOT, "mnist/checkpoints/eps.dfxckpt"))
    mode_args(ap)
    ap.add_argument("--machine", action="store_true")
    ap.add_argument("--skip-dtype", choices=("float64", "float32"), default="float64")
    args = ap.parse_args()
    if sum(x is not None and x is not False for x in (args.check, args.bench, args.machine or None, args.table)) != 1:
        fail("want exactly one of --check, --bench, --machine, --table")
    if args.table:
        return table(args)
    import torch
    torch.set_num_threads(args.threads)
    if args.machine:
        return machine(args)
    header, arrays = read_checkpoint(args.ckpt)
    twin = EpsTwin(header, arrays, getattr(torch, args.skip_dtype))
    if args.check:
        return 0 if check(twin, load_fixture(args.check), args.tol) else 1
    return bench(twin, load_fixture(args.bench), args)


def run(main, fail):
    """sys.exit(main()), a missing or malformed file one line on stderr and exit 2 (fail)."""
    try:
        sys.exit(main())
    except (OSError, ValueError, KeyError) as err:
        fail("%s: %s" % (type(err).__name__, err))


if __name__ == "__main__":
    run(main, fail)
