# Cross-check of dfx's ot package (protocol "published"), not used by the tests:
# an independent float32 NumPy transcription of the published OT script
# (zituitui/DiffusionFisher OT/ot.py: diffusers DDIM linspace timesteps, scaled_linear
# betas, plain exp), averaged over 4000 chains. Run: /usr/bin/python3 ot/testdata/published_script_numpy.py
# Output (2026-11-22): offdiag ve 12.09, vp 11.00, sub-vp 9.36, edm 27.33 (%); dfx with 4000
# chains, float64: 12.09, 11.12, 9.33, 27.35.
import numpy as np
f32 = np.float32
betas = (np.linspace(np.sqrt(0.00085), np.sqrt(0.012), 1000, dtype=np.float32) ** 2).astype(f32)
ac = np.cumprod((1 - betas).astype(f32)).astype(f32)
ts = np.linspace(0, 999, 20).round()[::-1].astype(np.int64)
ys = {"non-affine": np.array([[0.5, 0], [0, -0.5], [0, 0]], f32), "affine": np.array([[0, 0], [0, 0.5], [0, -0.6]], f32)}
def idx(A):
    A = A.copy(); np.fill_diagonal(A, 0)
    n = np.linalg.norm(A)
    return 0.0 if n == 0 else np.linalg.norm(A - A.T) / (np.sqrt(f32(2)) * n)
def full(A):
    return np.linalg.norm(A - A.T) / (np.sqrt(2) * np.linalg.norm(A))
rng = np.random.default_rng(0)
K = 4000
for sched in ["ve", "vp", "sub-vp", "edm"]:
    Y = ys["non-affine"]
    rates, fulls = [], []
    for j in range(K):
        x = rng.standard_normal(2).astype(f32)
        A = np.eye(2, dtype=f32)
        for i in range(19):
            t, tn = ts[i], ts[i + 1]
            a_s, a_t = ac[tn], ac[t]
            dt = f32(-(t - tn) / 1000.0)
            if sched in ("vp", "sub-vp"):
                s_s, s_t = np.sqrt(1 - a_s), np.sqrt(1 - a_t); a_s, a_t = np.sqrt(a_s), np.sqrt(a_t)
                b = betas[t]; f = f32(-0.5) * b * 1000
                g2 = b * 1000
                if sched == "sub-vp":
                    b0, b1 = betas[-1], betas[0]; tau = f32(t / 1000.0)
                    g2 = b * f32(1 - np.exp(-2 * b0 * 1000 * tau - (b1 * 1000 - b0 * 1000) * tau ** 2)) * 1000
            elif sched == "edm":
                a_t = a_s = f32(1); s_t = f32(t / 1000.0); s_s = f32(tn / 1000.0); f = f32(0); g2 = f32(2 * t / 1000.0)
            else:
                a_t = a_s = f32(1); s_t = f32(np.sqrt(t / 1000.0)); s_s = f32(np.sqrt(tn / 1000.0)); f = f32(0); g2 = f32(1)
            v = np.exp(-np.sum((x - a_t * Y) ** 2, axis=1) / (2 * s_t ** 2)).astype(f32)
            w = v / v.sum()
            yb = (w[:, None] * Y).sum(0)
            cov = (w[:, None, None] * Y[:, :, None] * Y[:, None, :]).sum(0) - np.outer(yb, yb)
            B = (f - g2 / (2 * s_t ** 2)) * np.eye(2, dtype=f32) + (a_t ** 2 * g2) / (2 * s_t ** 4) * cov
            A = (A + B @ A * dt).astype(f32)
            eps = -(a_t * yb - x) / s_t
            cx = a_s / a_t
            x = (cx * x + (s_s - s_t * cx) * eps).astype(f32)
        rates.append(idx(A)); fulls.append(full(A))
    r = np.array(rates); fl = np.array(fulls)
    print(f"{sched:7s} offdiag {100*np.nanmean(r):6.2f} ± {100*np.nanstd(r):5.2f}  full {100*np.nanmean(fl):5.2f}  nan {np.isnan(r).sum()}  K={K}")
