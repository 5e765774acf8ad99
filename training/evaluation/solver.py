"""Many L2-regularised logistic regressions on one feature matrix at once (numpy, CPU).

SentEval fits one ``sklearn.linear_model.LogisticRegression`` per (fold, C): for 10×10 nested
cross-validation over 7 values of C that is 700 fits, hours for 3000-d vectors on two cores. All of
those problems share the feature matrix and differ only in which rows they train on and in C, so we
solve them together:

* one matrix product ``X @ Θ`` per step serves every problem (``Θ`` stacks the problems' weights);
  rows a problem does not train on get weight 0, and their logits are its held-out predictions;
* each problem runs its own L-BFGS (two-loop recursion and Armijo backtracking, vectorised over
  problems), in coordinates preconditioned by the top eigenpairs of ``XᵀX/n`` so that a few dozen
  steps reach the optimum whatever the conditioning of the vectors.

The optimum is the one sklearn finds: ``min_W,b  C·Σ_i w_i·CE(t_i, softmax(x_i W + b)) + ½‖W‖²``
(sigmoid with one logit column for two classes, as sklearn's binary case); the intercept is not
penalised. Targets may be soft (probability rows), which gives Tai et al.'s soft-label regression.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# monitor(iteration, active problem ids, theta (k, d, c), bias (k, c), logits (n, k, c)) -> stop mask (k,)
Monitor = Callable[[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class Design:
    """Features ready for :func:`fit`: centred, scaled by one constant, with a preconditioner.

    ``X = (X_raw − mean) · scale``. Centring and a global scale change no prediction (the intercept
    absorbs the mean; one C grid then suits every encoder's vector norm). ``Q, s`` are the top
    eigenpairs of ``XᵀX/n`` and ``s_tail`` the mean of the remaining eigenvalues.
    """

    X: np.ndarray  # (n, d) float32
    mean: np.ndarray  # (d,) float32, in raw units
    scale: float
    Q: np.ndarray  # (d, r) float32
    s: np.ndarray  # (r,) float64
    s_tail: float

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    def transform(self, X_raw: np.ndarray) -> np.ndarray:
        return (np.asarray(X_raw, np.float32) - self.mean) * np.float32(self.scale)


def make_design(X_raw: np.ndarray, rank: int = 256, seed: int = 0, overwrite: bool = False) -> Design:
    """Centre and scale ``X_raw`` (n, d) and find its top ``rank`` eigen-directions.

    The preconditioner only speeds the solver up; any rows may be used to build it (we use all
    rows of a task, labels are never seen), and it never changes the optimum. ``overwrite``: reuse
    ``X_raw``'s memory when it is float32 (SST-2's 70k rows × 3000 dims are 840 MB).
    """
    X = np.asarray(X_raw, dtype=np.float32) if overwrite else np.array(X_raw, dtype=np.float32, copy=True)
    mean = X.mean(axis=0)
    X -= mean
    sq = float(np.einsum("ij,ij->", X, X, dtype=np.float64)) / max(len(X), 1)
    scale = 1.0 / np.sqrt(sq) if sq > 0 else 1.0
    X *= np.float32(scale)  # mean squared row norm is now 1
    n, d = X.shape
    trace = 1.0 if sq > 0 else 0.0
    if d <= 2 * rank:  # small: exact eigendecomposition of the d×d Gram matrix
        s, Q = np.linalg.eigh((X.T @ X).astype(np.float64) / n)
        s, Q = np.clip(s[::-1], 0, None), Q[:, ::-1]
        return Design(X, mean, scale, Q.astype(np.float32), s, 0.0)
    # randomised range finder (Halko et al. 2011, alg. 4.4) with two power iterations
    rng = np.random.default_rng(seed)
    Y = X.T @ (X @ rng.standard_normal((d, rank + 16)).astype(np.float32))  # (d, r+16)
    for _ in range(2):
        Y, _ = np.linalg.qr(Y)
        Y = X.T @ (X @ Y)
    B, _ = np.linalg.qr(Y)  # (d, r+16) orthonormal
    XB = (X @ B).astype(np.float64)  # (n, r+16)
    s, V = np.linalg.eigh(XB.T @ XB / n)
    s, V = np.clip(s[::-1][:rank], 0, None), V[:, ::-1][:, :rank]
    Q = (B @ V.astype(np.float32)).astype(np.float32)  # (d, r)
    s_tail = max(trace - float(s.sum()), 0.0) / max(d - rank, 1)
    return Design(X, mean, scale, Q, s, s_tail)


@dataclass
class Fit:
    """Solutions of k problems: weights in the design's feature space and logits for every row."""

    theta: np.ndarray  # (k, d, c)
    bias: np.ndarray  # (k, c)
    logits: np.ndarray  # (n, k, c) at the returned parameters
    n_iter: np.ndarray  # (k,)
    converged: np.ndarray  # (k,) bool

    def proba(self) -> np.ndarray:
        """(n, k, classes) probabilities; a one-logit (binary) fit gives two columns."""
        return _proba(self.logits)


def _proba(z: np.ndarray) -> np.ndarray:
    if z.shape[-1] == 1:
        p1 = 1.0 / (1.0 + np.exp(-z[..., 0]))
        return np.stack([1.0 - p1, p1], axis=-1)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


class _Problems:
    """Loss, gradient and preconditioning for a batch of problems (the solver's inner loop)."""

    def __init__(self, design: Design, targets: np.ndarray, weights: np.ndarray, C: np.ndarray):
        self.D = design
        T = np.asarray(targets, np.float64)  # (n, classes)
        self.T = T[:, 1:2] if T.shape[1] == 2 else T  # binary: one sigmoid logit
        self.c = self.T.shape[1]
        self.W = np.asarray(weights, np.float64)  # (k, n)
        self.nw = self.W.sum(axis=1)  # (k,)
        if (self.nw <= 0).any():
            raise ValueError("every problem needs at least one training row")
        self.lam = 1.0 / (np.asarray(C, np.float64) * self.nw)  # (k,) per-sample L2 strength
        a = 0.25 if self.c == 1 else 1.0 / (self.c + 1)  # curvature of the loss at the start
        self.m_r = 1.0 / np.sqrt(a * design.s[None, :] + self.lam[:, None])  # (k, r)
        self.m_t = 1.0 / np.sqrt(a * design.s_tail + self.lam)  # (k,)
        self.m_b = 1.0 / np.sqrt(a)
        self.dim = design.d * self.c + self.c  # parameters per problem (weights + bias)

    def params(self, U: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Preconditioned coordinates U (k, dim) → weights Θ = M·U (k, d, c) and bias (k, c)."""
        d, c = self.D.d, self.c
        Uw = U[:, : d * c].reshape(len(idx), d, c)
        QtU = np.einsum("dr,kdc->krc", self.D.Q, Uw.astype(np.float32))  # (k, r, c)
        scale = (self.m_r[idx] - self.m_t[idx, None])[:, :, None]
        theta = np.einsum("dr,krc->kdc", self.D.Q, (QtU * scale).astype(np.float32)) + self.m_t[idx, None, None] * Uw
        return theta, U[:, d * c :] * self.m_b

    def coordinates(self, theta: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`params` for all problems: U = M⁻¹Θ (warm starts)."""
        k = len(theta)
        QtT = np.einsum("dr,kdc->krc", self.D.Q, theta.astype(np.float32))
        scale = (1.0 / self.m_r - 1.0 / self.m_t[:, None])[:, :, None]
        uw = np.einsum("dr,krc->kdc", self.D.Q, (QtT * scale).astype(np.float32)) + theta / self.m_t[:, None, None]
        return np.concatenate([uw.reshape(k, -1), bias / self.m_b], axis=1)

    def precondition(self, g_theta: np.ndarray, g_bias: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Gradient in U coordinates: Mᵀ·g (M is symmetric)."""
        k = len(idx)
        QtG = np.einsum("dr,kdc->krc", self.D.Q, g_theta.astype(np.float32))
        scale = (self.m_r[idx] - self.m_t[idx, None])[:, :, None]
        gw = np.einsum("dr,krc->kdc", self.D.Q, (QtG * scale).astype(np.float32)) + self.m_t[idx, None, None] * g_theta
        return np.concatenate([gw.reshape(k, -1), g_bias * self.m_b], axis=1)

    def evaluate(self, U: np.ndarray, idx: np.ndarray):
        """Objective (k,), gradient in U coordinates (k, dim), logits (n, k, c), Θ and bias."""
        theta, bias = self.params(U, idx)
        k, d, c = len(idx), self.D.d, self.c
        Z = (self.D.X @ theta.transpose(1, 0, 2).reshape(d, k * c).astype(np.float32)).reshape(-1, k, c)
        Z = Z.astype(np.float64) + bias[None]  # (n, k, c)
        W = self.W[idx].T / self.nw[idx]  # (n, k): each problem's rows, normalised
        if c == 1:
            z = Z[..., 0]
            loss = np.logaddexp(0.0, z) - self.T * z  # (n, k)
            R = (1.0 / (1.0 + np.exp(-z)) - self.T)[..., None]  # dloss/dz (n, k, 1)
        else:
            zmax = Z.max(axis=2, keepdims=True)
            lse = np.log(np.exp(Z - zmax).sum(axis=2, keepdims=True)) + zmax
            loss = lse[..., 0] - np.einsum("nkc,nc->nk", Z, self.T)
            R = np.exp(Z - lse) - self.T[:, None, :]
        GR = (R * W[..., None]).astype(np.float32)  # (n, k, c)
        g_theta = (self.D.X.T @ GR.reshape(len(Z), k * c)).reshape(d, k, c).transpose(1, 0, 2)
        g_theta = g_theta.astype(np.float64) + self.lam[idx, None, None] * theta
        g_bias = GR.sum(axis=0).astype(np.float64)
        f = (loss * W).sum(axis=0) + 0.5 * self.lam[idx] * np.einsum("kdc,kdc->k", theta, theta, dtype=np.float64)
        return f, self.precondition(g_theta, g_bias, idx), Z, theta, bias


def fit(
    design: Design,
    targets: np.ndarray,
    weights: np.ndarray,
    C: np.ndarray | list[float],
    *,
    max_iter: int = 200,
    tol: float = 1e-6,
    memory: int = 10,
    monitor: Monitor | None = None,
    init: tuple[np.ndarray, np.ndarray] | None = None,
) -> Fit:
    """Solve k problems on ``design``. ``targets`` (n, classes): one-hot or soft rows;
    ``weights`` (k, n): 1 for the rows a problem trains on, 0 elsewhere; ``C`` (k,): sklearn's C.

    A problem stops when its objective changes by less than ``tol`` (relative) or its projected
    gradient is below ``tol``; ``monitor`` may stop problems too (early stopping on a dev set).
    ``init``: starting weights and biases (k, d, c), (k, c), e.g. the solution for a nearby C.
    """
    P = _Problems(design, targets, np.atleast_2d(weights), np.asarray(C, np.float64))
    k = len(P.W)
    U = np.zeros((k, P.dim)) if init is None else P.coordinates(np.asarray(init[0], np.float64), np.asarray(init[1], np.float64))
    idx_all = np.arange(k)
    f, g, Z, theta, bias = P.evaluate(U, idx_all)
    out = Fit(theta, bias, Z, np.zeros(k, int), np.zeros(k, bool))
    S = np.zeros((memory, k, P.dim))
    Yh = np.zeros((memory, k, P.dim))
    rho = np.zeros((memory, k))
    active = np.ones(k, bool)
    for it in range(1, max_iter + 1):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        direction = -_two_loop(g[idx], S[:, idx], Yh[:, idx], rho[:, idx], it)
        slope = np.einsum("kd,kd->k", g[idx], direction)
        bad = slope >= 0  # not a descent direction: forget the history, go down the gradient
        if bad.any():
            direction[bad], slope[bad] = -g[idx][bad], -np.einsum("kd,kd->k", g[idx][bad], g[idx][bad])
            rho[:, idx[bad]] = 0.0
        step, (f_new, g_new, Z_new, th_new, b_new) = _backtrack(P, U[idx], idx, f[idx], direction, slope)
        s_vec = step[:, None] * direction
        y_vec = g_new - g[idx]
        slot = (it - 1) % memory
        sy = np.einsum("kd,kd->k", s_vec, y_vec)
        S[slot, idx], Yh[slot, idx] = s_vec, y_vec
        rho[slot, idx] = np.where(sy > 1e-12, 1.0 / np.where(sy > 1e-12, sy, 1.0), 0.0)  # skip bad curvature
        decrease = f[idx] - f_new
        U[idx] += s_vec
        f[idx], g[idx] = f_new, g_new
        out.logits[:, idx], out.theta[idx], out.bias[idx] = Z_new, th_new, b_new
        out.n_iter[idx] = it
        done = (decrease <= tol * np.maximum(1.0, np.abs(f_new))) | (np.abs(g_new).max(axis=1) <= tol)
        out.converged[idx[done]] = True
        if monitor is not None:
            done |= np.asarray(monitor(it, idx, th_new, b_new, Z_new), bool)
        active[idx[done]] = False
    return out


def _backtrack(P: _Problems, U: np.ndarray, idx: np.ndarray, f: np.ndarray, direction: np.ndarray, slope: np.ndarray):
    """Armijo backtracking from step 1 (the preconditioned Hessian is ≈ I at the start, so 1 is the
    natural step), re-evaluating only the problems whose step failed. Returns steps and evaluation."""
    step = np.ones(len(idx))
    ev = list(P.evaluate(U + direction, idx))  # f, g, Z (n, k, c), theta, bias
    for _ in range(30):
        fail = ev[0] > f + 1e-4 * step * slope
        if not fail.any():
            break
        step[fail] *= 0.5
        again = P.evaluate(U[fail] + step[fail, None] * direction[fail], idx[fail])
        for i, new in enumerate(again):
            if i == 2:  # logits are (n, k, c): problems on axis 1
                ev[i][:, fail] = new
            else:
                ev[i][fail] = new
    return step, ev


def _two_loop(g: np.ndarray, S: np.ndarray, Y: np.ndarray, rho: np.ndarray, it: int) -> np.ndarray:
    """L-BFGS two-loop recursion for each problem (rows of g); entries with rho = 0 are skipped."""
    m = S.shape[0]
    order = [(it - 2 - i) % m for i in range(min(it - 1, m))]  # newest first
    q = g.copy()
    alpha = {}
    for j in order:
        alpha[j] = rho[j] * np.einsum("kd,kd->k", S[j], q)
        q -= alpha[j][:, None] * Y[j]
    gamma = np.ones(len(g))
    if order:
        newest = order[0]
        yy = np.einsum("kd,kd->k", Y[newest], Y[newest])
        ok = (rho[newest] > 0) & (yy > 0)
        gamma[ok] = 1.0 / (rho[newest][ok] * yy[ok])
    r = gamma[:, None] * q
    for j in reversed(order):
        beta = rho[j] * np.einsum("kd,kd->k", Y[j], r)
        r += S[j] * (alpha[j] - beta)[:, None]
    return r
