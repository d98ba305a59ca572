#!/usr/bin/python3
"""bench_torch.py — PyTorch (Debian's python3-torch 1.13, CPU, float32) twins of
the networks timed by dfx's Go benchmarks, for scripts/bench-torch.sh.

Cases (names match the Go sub-benchmarks without "Benchmark" and "-GOMAXPROCS"):

  MLP/784-512-512-512-784/B=256/{forward,grad-x,train-step}
                          — BenchmarkMLP (models/torchcompare_test.go), plain GoMLX
    h ← tanh(h·W_i + b_i) for the hidden layers, last layer linear;
    W_i [in,out] He-normal (N(0,1)·√(2/in), GoMLX's default initialiser),
    b_i [1,out] zero; x, target [256, 784] ~ N(0,1).
    forward:    out, under torch.no_grad()
    grad-x:     ∂ sum(out⊙out)/∂x          (weights do not require grad)
    train-step: as GoMLX's train.Trainer.TrainStep with loss.MeanSquaredError and
                optimizer.Adam (lr 1e-3, β 0.9/0.999, ε 1e-7): fresh copies of
                the batch tensors (the Go trainer takes ownership of fresh
                tensors), loss = mean((target − out)²), backward, Adam step,
                loss.item().

  ScoreNet/d=<d>/w=<width>x<depth>/B=<batch>/{forward,grad-x,grad-all,train-step}
                          — BenchmarkScoreNet (models/bench_test.go) and
                            BenchmarkScoreNetGradAll (models/torchcompare_test.go)
    models.ResidualMLP (models/net.go) with dfx's defaults (SiLU, embed_dim 32 →
    16 frequencies f_k = 8^(k/15)), ε-parameterisation, layer for layer; every
    Dense is x·W + b with W [in,out] He-normal and b [1,out] zero:
      c_in = 1/√(α²+σ²), h₀ = Dense_input(c_in x), λ = log(σ/α),
      e = act(Dense_embed([λ, sin(f λ), cos(f λ)]))          (33 → width)
      depth×: h ← h + Dense_2(act(Dense_1(act(h)) + Dense_e(e)))
      ε̂ = Dense_output(act(h))                              (width → d)
    Inputs: x₀ rows of 512 N(0,1) data rows, t ~ U[1e-5, 1], α(t), σ(t) of the
    VP schedule (β_min 0.1, β_max 20; schedule.DefaultVP()).
    forward:    ε̂(x₀, α, σ) under torch.no_grad()
    grad-x:     ∂ sum(ε̂²)/∂x            (parameters do not require grad)
    grad-all:   ∂ sum(ε̂²)/∂(x, every parameter)
    train-step: one DSM step as models.Trainer.TrainSteps(1) takes it
                (models/train.go, models/optimizer.go), host sampling included:
                rows drawn from the data, ε ~ N(0,I), t ~ U (float64), α, σ,
                weight 1 per row (weighting "eps"), class = null class, the
                step's learning rate (LearningRate: constant 1e-3);
                x_t = α x₀ + σ ε, loss = mean_b(mean_j (ε̂(x_t)−ε)² · w_b);
                backward; global-norm clipping at 1 (scale = min(1,
                1/(‖g‖+1e-12)), applied always, as clippedAdamEMA does); Adam
                (lr 1e-3, β 0.9/0.999, ε 1e-7 as GoMLX); EMA 0.999 of every
                parameter (ema = w at the first step); loss.item().

PyTorch's own idioms where they compute the same thing: torch.addmm for
x·W + b, F.silu for x·σ(x), torch.optim.Adam (its defaults otherwise).

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

MLP_CASES = [([784, 512, 512, 512, 784], 256)]  # (dims, batch) as in BenchmarkMLP
SCORE_CASES = [(2, 128, 3, 1024), (64, 256, 3, 256), (784, 256, 3, 128), (784, 1024, 4, 128)]  # (d, width, depth, batch)
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
    """models.Dense: x·W + b, W [in, out], b [1, out]."""

    def __init__(self, fan_in, fan_out, gen):
        super().__init__()
        self.weights = nn.Parameter(he_normal(fan_in, fan_out, gen))
        self.biases = nn.Parameter(torch.zeros(1, fan_out))

    def forward(self, x):
        return torch.addmm(self.biases, x, self.weights)


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


def mlp_cases(gen):
    for dims, batch in MLP_CASES:
        name = "MLP/%s/B=%d" % ("-".join(str(d) for d in dims), batch)
        net = MLP(dims, gen)
        params = list(net.parameters())
        x = torch.randn(batch, dims[0], generator=gen)
        target = torch.randn(batch, dims[-1], generator=gen)

        def forward():
            with torch.no_grad():
                return net(x)

        xg = x.clone().requires_grad_(True)

        def grad_x():
            net.requires_grad_(False)
            try:
                out = net(xg)
                return torch.autograd.grad((out * out).sum(), xg)
            finally:
                net.requires_grad_(True)

        opt = torch.optim.Adam(params, lr=LR, betas=BETAS, eps=ADAM_EPS)

        def train_step():
            xb, yb = x.clone(), target.clone()
            loss = F.mse_loss(net(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss.item()

        print("%s: %d parameters in %d tensors" % (name, sum(p.numel() for p in params), len(params)))
        for mode, fn in (("forward", forward), ("grad-x", grad_x), ("train-step", train_step)):
            yield "%s/%s" % (name, mode), fn


# ---- score network (models.ResidualMLP; BenchmarkScoreNet, BenchmarkScoreNetGradAll) ----

class Block(nn.Module):
    def __init__(self, width, gen):
        super().__init__()
        self.dense1 = Dense(width, width, gen)
        self.embed = Dense(width, width, gen)
        self.dense2 = Dense(width, width, gen)


class ScoreNet(nn.Module):
    def __init__(self, d, width, depth, gen, embed_dim=32, max_freq=8.0):
        super().__init__()
        n = max(embed_dim // 2, 1)
        freqs = [max_freq ** (k / max(n - 1, 1)) for k in range(n)]
        self.register_buffer("freqs", torch.tensor([freqs], dtype=torch.float32))  # [1, n]
        self.input = Dense(d, width, gen)
        self.embed = Dense(1 + 2 * n, width, gen)
        self.blocks = nn.ModuleList([Block(width, gen) for _ in range(depth)])
        self.output = Dense(width, d, gen)

    def forward(self, x, alpha, sigma):
        a, s = alpha[:, None], sigma[:, None]
        c_in = 1.0 / torch.sqrt(a * a + s * s)
        h = self.input(x * c_in)
        lam = torch.log(s / a)  # [B, 1]
        arg = lam * self.freqs  # [B, n]
        e = F.silu(self.embed(torch.cat([lam, torch.sin(arg), torch.cos(arg)], -1)))
        for blk in self.blocks:
            u = blk.dense1(F.silu(h)) + blk.embed(e)
            h = h + blk.dense2(F.silu(u))
        return self.output(F.silu(h))  # ε-parameterisation: ε̂ is the output


def vp_alpha_sigma(t):
    """α, σ of schedule.DefaultVP() at t (float64 tensor), as float32."""
    log_a = -0.25 * t * t * (VP["beta_max"] - VP["beta_min"]) - 0.5 * t * VP["beta_min"]
    return torch.exp(log_a).float(), torch.sqrt(-torch.expm1(2 * log_a)).float()


def sample_t(n, gen):
    return VP["t_min"] + (VP["t_max"] - VP["t_min"]) * torch.rand(n, dtype=torch.float64, generator=gen)


def score_cases(gen):
    for d, width, depth, batch in SCORE_CASES:
        name = "ScoreNet/d=%d/w=%dx%d/B=%d" % (d, width, depth, batch)
        net = ScoreNet(d, width, depth, gen)
        params = list(net.parameters())
        data = torch.randn(512, d, generator=gen)
        x = data[torch.randint(0, 512, (batch,), generator=gen)]
        alpha, sigma = vp_alpha_sigma(sample_t(batch, gen))

        def forward():
            with torch.no_grad():
                return net(x, alpha, sigma)

        xg = x.clone().requires_grad_(True)

        def grad_x():
            net.requires_grad_(False)
            try:
                out = net(xg, alpha, sigma)
                return torch.autograd.grad((out * out).sum(), xg)
            finally:
                net.requires_grad_(True)

        wrt = [xg] + params

        def grad_all():
            out = net(xg, alpha, sigma)
            return torch.autograd.grad((out * out).sum(), wrt)

        opt = torch.optim.Adam(params, lr=LR, betas=BETAS, eps=ADAM_EPS)
        ema = [torch.zeros_like(p) for p in params]
        step = [0]

        def train_step():
            # host sampling (models.Trainer.batch)
            idx = torch.randint(0, data.shape[0], (batch,), generator=gen)
            x0 = data[idx]
            eps = torch.randn(batch, d, generator=gen)
            a, s = vp_alpha_sigma(sample_t(batch, gen))
            weight = torch.ones(batch)  # weighting "eps"
            _class = torch.zeros(batch, dtype=torch.int32)  # null class (unconditional)
            opt.param_groups[0]["lr"] = LR  # LearningRate(store, step): constant
            # loss (models.Trainer.perSampleLoss + meanLoss)
            xt = a[:, None] * x0 + s[:, None] * eps
            loss = (((net(xt, a, s) - eps) ** 2).mean(-1) * weight).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            # clippedAdamEMA: global-norm clipping, Adam, EMA
            grads = [p.grad for p in params]
            norm = torch.sqrt(sum((g * g).sum() for g in grads))
            scale = torch.clamp(CLIP / (norm + 1e-12), max=1.0)
            for g in grads:
                g.mul_(scale)
            opt.step()
            step[0] += 1
            with torch.no_grad():
                if step[0] == 1:
                    for e, p in zip(ema, params):
                        e.copy_(p)
                else:
                    torch._foreach_mul_(ema, EMA)
                    torch._foreach_add_(ema, params, alpha=1 - EMA)
            return loss.item()

        print("%s: %d parameters in %d tensors" % (name, sum(p.numel() for p in params), len(params)))
        for mode, fn in (("forward", forward), ("grad-x", grad_x), ("grad-all", grad_all), ("train-step", train_step)):
            yield "%s/%s" % (name, mode), fn


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
