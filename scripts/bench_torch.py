#!/usr/bin/python3
"""bench_torch.py — PyTorch (Debian's python3-torch 1.13, CPU, float32) twins of
the networks timed by dfx's Go benchmarks, for scripts/bench-torch.sh.

Cases (names match the Go sub-benchmarks without "Benchmark" and "-GOMAXPROCS"):

  MLP/784-512-512-512-784/B=<1|64|256>/{forward,grad-x}, .../B=256/train-step
                          — BenchmarkMLP (models/torchcompare_test.go), plain GoMLX
    h ← tanh(h·W_i + b_i) for the hidden layers, last layer linear; W_i
    He-normal (N(0,1)·√(2/in), GoMLX's default initialiser), b_i zero;
    x, target [256, 784] ~ N(0,1) (batch B: the first B rows).
    forward:    out, under torch.no_grad()
    grad-x:     ∂ sum(out⊙out)/∂x          (weights do not require grad)
    train-step: as GoMLX's train.Trainer.TrainStep with loss.MeanSquaredError and
                optimizer.Adam (lr 1e-3, β 0.9/0.999, ε 1e-7): fresh copies of
                the batch tensors, loss = mean((target − out)²), backward, Adam
                step, loss.item().

  ScoreNet/d=<d>,w=<width>x<depth>[,K=<classes>][,edm][,dftm]/B=<b>/{forward,grad-x,grad-all},
  .../B=<training batch>/train-step
                          — BenchmarkScoreNet (models/bench_test.go), b = 1, 64
                            and the training batch
    models.ResidualMLP (models/net.go) with dfx's defaults (SiLU, embed_dim 32 →
    16 frequencies f_k = 8^(k/15)), layer for layer; every Dense is x·Wᵀ + b
    with W [out, in] (models' default layout, PyTorch's F.linear):
      c_in = 1/√(α²+σ²), h₀ = Dense_input(c_in x), λ = log(σ/α),
      e = act(Dense_embed([λ, sin(f λ), cos(f λ)]) [+ onehot(c)·table])
      depth×: h ← h + Dense_2(act(Dense_1(act(h)) + Dense_e(e)))
      out = Dense_output(act(h))   (width → d; → 1 for the DF-TM head t_θ)
    ε̂ = out (parameterisation eps) or ε̂ = a x + b out (edm, models.EpsFromGraph
    with σ_data = 0.5). The MNIST networks (mnist.Specs): K = 10 classes, edm,
    width 512 × 3, for the ε-network and t_θ (",dftm").
    Inputs: rows of 512 N(0,1) data rows, labels i mod K, t ~ U[1e-5, 1], α(t),
    σ(t) of the VP schedule (β_min 0.1, β_max 20; schedule.DefaultVP()).
    forward:    out(x₀, α, σ, c) under torch.no_grad()
    grad-x:     ∂ sum(out²)/∂x            (parameters do not require grad)
    grad-all:   ∂ sum(out²)/∂(x, every parameter)
    train-step: one step as models.Trainer.TrainSteps(1) takes it (models/train.go,
                models/hostadam.go), host sampling included: rows drawn from the
                data, ε ~ N(0,I), t ~ U (float64), α, σ, CFG dropout 0.1 to the
                null class; x_t = α x₀ + σ ε; loss = mean_b mean_j (ε̂(x_t)−ε)²
                (DSM, weighting eps) or mean_b (t_θ − ‖x₀‖²/d)² (DF-TM);
                backward; global-norm clipping at 1; Adam (lr 1e-3, β 0.9/0.999,
                ε 1e-7 as GoMLX); EMA 0.999 of every parameter (ema = w at the
                first step); loss.item().

PyTorch's own idioms where they compute the same thing: F.linear for x·Wᵀ + b,
F.silu for x·σ(x), F.embedding for the class table, torch.optim.Adam (its
defaults otherwise), torch._foreach_* for the clipping scale and the EMA.

Each case: --warmup calls, then --repeats timed repeats of `inner` calls each
(inner chosen so a repeat lasts ≥ --min-time s); the median of the per-call
means is reported, with the min. Machine-readable lines start with "RESULT ".
Run with Debian's interpreter: /usr/bin/python3.
"""
import argparse
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MLP_CASES = [([784, 512, 512, 512, 784], 256)]  # (dims, training batch) as in BenchmarkMLP
# (d, width, depth, classes, parameterisation, head, training batch) as scoreNetCases in models/bench_test.go:
# the toy-scale configurations and the MNIST ε-network and t_θ (mnist.Specs).
SCORE_CASES = [(2, 128, 3, 0, "eps", "eps", 1024), (64, 256, 3, 0, "eps", "eps", 256),
               (784, 256, 3, 0, "eps", "eps", 128), (784, 1024, 4, 0, "eps", "eps", 128),
               (784, 512, 3, 10, "edm", "eps", 128), (784, 512, 3, 10, "edm", "dftm", 128)]
EVAL_BATCHES = (1, 64)  # forward / grad-x / grad-all also at these batches, besides the training batch
EDM_SIGMA_DATA = 0.5    # models.EDMSigmaData
VP = dict(beta_min=0.1, beta_max=20.0, t_min=1e-5, t_max=1.0)  # schedule.DefaultVP()
LR, BETAS, ADAM_EPS, CLIP, EMA = 1e-3, (0.9, 0.999), 1e-7, 1.0, 0.999


def timeit(fn, warmup, repeats, min_time):
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    inner = max(1, int(math.ceil(min_time / one)))
    per_call = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        per_call.append((time.perf_counter() - t0) / inner)
    return statistics.median(per_call), min(per_call), inner


def he_normal(fan_in, fan_out, gen):
    """GoMLX's default initialiser for a [in, out] weight: N(0,1)·√(2/in)."""
    return torch.randn(fan_in, fan_out, generator=gen) * math.sqrt(2.0 / max(1, fan_in))


class Dense(nn.Module):
    """models.Dense in its default layout: x·Wᵀ + b with W [out, in] (PyTorch's own
    nn.Linear layout, F.linear), He-normal with fan-in = in, b [out] zero."""

    def __init__(self, fan_in, fan_out, gen):
        super().__init__()
        self.weight = nn.Parameter(he_normal(fan_in, fan_out, gen).t().contiguous())
        self.bias = nn.Parameter(torch.zeros(fan_out))

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


# ---- plain MLP (BenchmarkMLP) ------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self, dims, gen):
        super().__init__()
        self.layers = nn.ModuleList([Dense(dims[i], dims[i + 1], gen) for i in range(len(dims) - 1)])

    def forward(self, x):
        h = x
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i + 1 < len(self.layers):
                h = torch.tanh(h)
        return h


def rows(t, n):
    return t[:n].clone()


def mlp_cases(gen):
    for dims, batch in MLP_CASES:
        arch = "-".join(str(d) for d in dims)
        net = MLP(dims, gen)
        params = list(net.parameters())
        x_full = torch.randn(batch, dims[0], generator=gen)
        target = torch.randn(batch, dims[-1], generator=gen)
        print("MLP/%s: %d parameters in %d tensors" % (arch, sum(p.numel() for p in params), len(params)))
        for b in EVAL_BATCHES + (batch,):
            x = rows(x_full, b)
            xg = x.clone().requires_grad_(True)

            def forward(x=x):
                with torch.no_grad():
                    return net(x)

            def grad_x(xg=xg):
                net.requires_grad_(False)
                try:
                    out = net(xg)
                    return torch.autograd.grad((out * out).sum(), xg)
                finally:
                    net.requires_grad_(True)

            yield "MLP/%s/B=%d/forward" % (arch, b), forward
            yield "MLP/%s/B=%d/grad-x" % (arch, b), grad_x

        opt = torch.optim.Adam(params, lr=LR, betas=BETAS, eps=ADAM_EPS)

        def train_step():
            xb, yb = x_full.clone(), target.clone()
            loss = F.mse_loss(net(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss.item()

        yield "MLP/%s/B=%d/train-step" % (arch, batch), train_step


# ---- score network (models.ResidualMLP; BenchmarkScoreNet, BenchmarkScoreNetGradAll) ----

class Block(nn.Module):
    def __init__(self, width, gen):
        super().__init__()
        self.dense1 = Dense(width, width, gen)
        self.embed = Dense(width, width, gen)
        self.dense2 = Dense(width, width, gen)


class ScoreNet(nn.Module):
    def __init__(self, d, width, depth, gen, classes=0, param="eps", out_dim=None, embed_dim=32, max_freq=8.0):
        super().__init__()
        n = max(embed_dim // 2, 1)
        freqs = [max_freq ** (k / max(n - 1, 1)) for k in range(n)]
        self.register_buffer("freqs", torch.tensor([freqs], dtype=torch.float32))  # [1, n]
        self.param = param
        self.input = Dense(d, width, gen)
        self.embed = Dense(1 + 2 * n, width, gen)
        # class table [K+1, width] (row K = null class), looked up as onehot·table like models.ResidualMLP
        self.table = nn.Parameter(he_normal(classes + 1, width, gen)) if classes > 0 else None
        self.classes = classes
        self.blocks = nn.ModuleList([Block(width, gen) for _ in range(depth)])
        self.output = Dense(width, out_dim or d, gen)

    def forward(self, x, alpha, sigma, cls=None):
        a, s = alpha[:, None], sigma[:, None]
        c_in = 1.0 / torch.sqrt(a * a + s * s)
        h = self.input(x * c_in)
        lam = torch.log(s / a)  # [B, 1]
        arg = lam * self.freqs  # [B, n]
        e = self.embed(torch.cat([lam, torch.sin(arg), torch.cos(arg)], -1))
        if self.table is not None and cls is not None:
            e = e + F.embedding(cls, self.table)
        e = F.silu(e)
        for blk in self.blocks:
            u = blk.dense1(F.silu(h)) + blk.embed(e)
            h = h + blk.dense2(F.silu(u))
        out = self.output(F.silu(h))
        if self.param == "edm":  # models.EpsFromGraph, PredictEDM: ε = a x + b F
            sd = EDM_SIGMA_DATA
            den = s * s + a * a * sd * sd
            return (s / den) * x - (a * sd / torch.sqrt(den)) * out
        return out


def vp_alpha_sigma(t):
    """α, σ of schedule.DefaultVP() at t (float64 tensor), as float32."""
    log_a = -0.25 * t * t * (VP["beta_max"] - VP["beta_min"]) - 0.5 * t * VP["beta_min"]
    return torch.exp(log_a).float(), torch.sqrt(-torch.expm1(2 * log_a)).float()


def sample_t(n, gen):
    return VP["t_min"] + (VP["t_max"] - VP["t_min"]) * torch.rand(n, dtype=torch.float64, generator=gen)


def score_cases(gen):
    for d, width, depth, classes, param, head, batch in SCORE_CASES:
        cfg = "ScoreNet/d=%d,w=%dx%d" % (d, width, depth)
        if classes:
            cfg += ",K=%d" % classes
        if param != "eps":
            cfg += "," + param
        if head != "eps":
            cfg += "," + head
        # t_θ (models.TraceNet) is the trunk's raw 1-wide output: no parameterisation applies to it
        net = ScoreNet(d, width, depth, gen, classes=classes, param="eps" if head == "dftm" else param,
                       out_dim=1 if head == "dftm" else d)
        params = list(net.parameters())
        data = torch.randn(512, d, generator=gen)
        labels = torch.arange(512) % max(classes, 1)
        idx = torch.randint(0, 512, (batch,), generator=gen)
        x_full, cls_full = data[idx], labels[idx]
        alpha_full, sigma_full = vp_alpha_sigma(sample_t(batch, gen))

        def run(x, alpha, sigma, cls):
            out = net(x, alpha, sigma, cls if classes else None)
            return out[:, 0] if head == "dftm" else out

        print("%s: %d parameters in %d tensors" % (cfg, sum(p.numel() for p in params), len(params)))
        for b in EVAL_BATCHES + (batch,):
            x, alpha, sigma, cls = rows(x_full, b), rows(alpha_full, b), rows(sigma_full, b), rows(cls_full, b)
            xg = x.clone().requires_grad_(True)

            def forward(x=x, alpha=alpha, sigma=sigma, cls=cls):
                with torch.no_grad():
                    return run(x, alpha, sigma, cls)

            def grad_x(xg=xg, alpha=alpha, sigma=sigma, cls=cls):
                net.requires_grad_(False)
                try:
                    out = run(xg, alpha, sigma, cls)
                    return torch.autograd.grad((out * out).sum(), xg)
                finally:
                    net.requires_grad_(True)

            wrt = [xg] + params

            def grad_all(xg=xg, alpha=alpha, sigma=sigma, cls=cls, wrt=wrt):
                out = run(xg, alpha, sigma, cls)
                return torch.autograd.grad((out * out).sum(), wrt)

            for mode, fn in (("forward", forward), ("grad-x", grad_x), ("grad-all", grad_all)):
                yield "%s/B=%d/%s" % (cfg, b, mode), fn

        opt = torch.optim.Adam(params, lr=LR, betas=BETAS, eps=ADAM_EPS)
        ema = [torch.zeros_like(p) for p in params]
        step = [0]

        def train_step():
            # host sampling (models.Trainer.batch)
            i = torch.randint(0, data.shape[0], (batch,), generator=gen)
            x0, cls = data[i], labels[i]
            eps = torch.randn(batch, d, generator=gen)
            a, s = vp_alpha_sigma(sample_t(batch, gen))
            if classes:  # CFG dropout 0.1 to the null class K
                cls = torch.where(torch.rand(batch, generator=gen) < 0.1, torch.full_like(cls, classes), cls)
            opt.param_groups[0]["lr"] = LR  # LearningRate(store, step): constant
            xt = a[:, None] * x0 + s[:, None] * eps
            if head == "dftm":  # models.DFTM: (t_θ − ‖x₀‖²/d)²
                loss = ((run(xt, a, s, cls) - (x0 * x0).mean(-1)) ** 2).mean()
            else:  # DSM, weighting "eps"
                loss = ((run(xt, a, s, cls) - eps) ** 2).mean(-1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            # clippedAdamEMA: global-norm clipping, Adam, EMA
            grads = [p.grad for p in params]
            norm = torch.sqrt(sum((g * g).sum() for g in grads))
            scale = torch.clamp(CLIP / (norm + 1e-12), max=1.0)
            torch._foreach_mul_(grads, scale)
            opt.step()
            step[0] += 1
            with torch.no_grad():
                if step[0] == 1:
                    torch._foreach_copy_(ema, params) if hasattr(torch, "_foreach_copy_") else [e.copy_(p) for e, p in zip(ema, params)]
                else:
                    torch._foreach_mul_(ema, EMA)
                    torch._foreach_add_(ema, params, alpha=1 - EMA)
            return loss.item()

        yield "%s/B=%d/train-step" % (cfg, batch), train_step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per timed repeat (≥ 1 call)")
    ap.add_argument("--only", default="", help="run only cases whose name contains this")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.threads < 1 or a.repeats < 1 or a.warmup < 0:
        ap.error("need threads, repeats >= 1 and warmup >= 0")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    print("torch %s, threads %d (interop %d), MKL-DNN %s" % (
        torch.__version__, torch.get_num_threads(), torch.get_num_interop_threads(),
        torch.backends.mkldnn.is_available()))
    print("warmup %d, %d repeats of ≥ %.2f s; median per-call time (min)" % (a.warmup, a.repeats, a.min_time))
    for gen_cases in (mlp_cases, score_cases):
        for name, fn in gen_cases(gen):
            if a.only and a.only not in name:
                continue
            med, best, inner = timeit(fn, a.warmup, a.repeats, a.min_time)
            print("RESULT name=%s ms=%.4f min_ms=%.4f inner=%d" % (name, med * 1e3, best * 1e3, inner), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
