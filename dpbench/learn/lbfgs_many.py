"""Lockstep L-BFGS: many independent softmax problems solved together, one GEMM per evaluation.

R problems J_r(θ) = mean CE(θᵀx, y) + (l2_r/2)‖θ‖²_F + ⟨linear_r, θ⟩ that share one design matrix X (the
repetitions and tuning values of a loss-perturbation point, van der Maaten & Hannun 2020 Alg. 4), or T problems
on T row blocks X_t (the members of subsample-and-aggregate, Alg. 8), are advanced one L-BFGS step at a time in
lockstep (Nocedal & Wright 2006, Alg. 7.4/7.5):

* **one evaluation for all active models**: logits of all of them from one GEMM with W of shape D × C·k
  (shared X; row chunks bound the work memory), or one GEMM per block (blocks);
* **per-model memories** of the last ``maxcor`` pairs (s, y) and the two-loop recursion vectorised over models;
* **per-model line search**: backtracking from the unit step (the first step 1/‖g‖, as L-BFGS-B) with a
  safeguarded cubic interpolation, accepting the Armijo condition or, where objective values are at their
  rounding limit, Hager & Zhang's (2005) approximate Wolfe conditions. No curvature condition is enforced: the
  problems here are λ-strongly convex with λ = l2 > 0 (sᵀy ≥ λ‖s‖² > 0 for every step), so every accepted
  step gives a valid positive-definite update, and a pair with sᵀy ≤ 0 (only possible without L2) is skipped.
  Every model needs one evaluation per round whether it is backtracking or has taken a step, so nobody waits;
* **per-model stopping** with the rules of :func:`dpbench.learn.fit_softmax`: either ``grad_norm_tol`` —
  stop at the first evaluated point with ‖∇J‖₂ ≤ τ, certified by a float64 evaluation, so ‖θ − θ*‖ ≤ τ/l2 —
  or scipy L-BFGS-B's ``gtol`` (max|∇J| ≤ gtol), ``ftol`` (relative decrease) and ``maxiter``; a model that
  stops leaves the batch.

**float32** (``float32=True``, models solved with a ``grad_norm_tol`` only): a model is first iterated with
single-precision evaluations (a float32 copy of X, half the memory traffic and twice the SIMD width) until its
single-precision gradient norm falls below ``FLOAT32_SWITCH``·τ or its line search fails, then continued in
float64 with the same curvature memory. Only a float64 evaluation can stop a model, so the certificate
‖∇J(θ̂)‖₂ ≤ τ — the bound the sensitivity and loss-perturbation calibrations rely on — is exactly that of
the float64 solver. The float32 copy of X is made only when it takes at most ``FLOAT32_MAX_BYTES``; a larger X
is converted one row chunk (``ROW_CHUNK`` rows) at a time during each single-precision evaluation, so no
second copy of a large training set is ever held.

**Batch invariance.** A model's iterates do not depend on which other models share its batch (tested bit for
bit), provided BLAS runs on a fixed number of threads (1: OpenBLAS splits a GEMM differently with more threads,
which changes the bits — measured). Every per-model quantity is a row-wise operation and the row chunks of X are
fixed. float64: the active models are packed, zero-padded to full GEMM panels (OpenBLAS's dgemm then gives every
row the same bits whatever its position and the batch size — measured). float32: OpenBLAS's sgemm does NOT have
this property (a row's bits depend on its position and on the batch size, measured), so in the single-precision
phase every model sits in its own fixed slot (``slots``) of a stack of ``n_slots`` models whose shape never
changes — empty slots (models absent, converged or already in float64) hold zeros. A model's result is then a
function of its own problem, its slot and ``n_slots`` only: the same whichever models share its solve, in which
order, and when they leave. So a cell's result does not depend on which cells of its group were computed
together (a resumed run, a shard, the number of workers) as long as its slot is a function of the cell.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpbench.learn.softmax import (EXP_FLOOR, FitInfo, KroneckerWhitening, _check_training, blas_thread_limit,
                                   softmax_curvature)

__all__ = ["lbfgs_many", "fit_softmax_lockstep", "SharedDesign", "BlockDesign", "Preconditioned", "softmax_curvature",
           "FLOAT32_SWITCH", "FLOAT32_MAX_BYTES"]  # softmax_curvature re-exported from dpbench.learn.softmax

#: a float32 model moves to float64 once its single-precision gradient norm is at most this many τ
FLOAT32_SWITCH = 30.0
#: largest float32 copy of X made for the single-precision phase (bytes)
FLOAT32_MAX_BYTES = 1 << 30
#: e^-87 ≈ 1.6e-38 is the smallest normal float32 exponential: the float32 analogue of EXP_FLOOR
EXP_FLOOR32 = -87.0
#: rows of X per evaluation chunk: fixed, so that a model's sums run in the same order whatever the batch
ROW_CHUNK = 4096
#: the k·C rows of the stacked parameters are padded with zeros to a multiple of this, so that every model's
#: rows go through the same full-width GEMM micro-kernels whatever k (batch-invariant results, tested)
ROW_PAD = 16
_ARMIJO = 1e-4  # c1 (sufficient decrease)
_AW_SIGMA, _AW_DELTA = 0.9, 0.1  # Hager-Zhang approximate Wolfe: (2δ-1)φ'(0) >= φ'(α) >= σφ'(0)
_MAX_BACKTRACK = 30


def _rowdot(a, b):
    """Row-wise dot products (k,) — each row summed by the same pairwise reduction whatever k (einsum's inner
    loop may depend on the shape)."""
    return np.multiply(a, b).sum(axis=1)


def _ce_stack(Z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """In place: logits Z (k, C, m) -> P − Y; returns the per-model summed cross-entropy (k,) in float64.
    ``y`` (m,) shared labels or (k, m) per-model labels."""
    k, C, m = Z.shape
    Z -= Z.max(axis=1, keepdims=True)
    if y.ndim == 1:
        cols = np.arange(m)
        true = Z[:, y, cols].sum(axis=1, dtype=np.float64)  # (k, m) -> (k,)
    else:
        true = np.take_along_axis(Z, y[:, None, :], axis=1).sum(axis=(1, 2), dtype=np.float64)
    np.maximum(Z, EXP_FLOOR32 if Z.dtype == np.float32 else EXP_FLOOR, out=Z)
    np.exp(Z, out=Z)
    s = Z.sum(axis=1, keepdims=True)
    loss = np.log(s).reshape(k, m).sum(axis=1, dtype=np.float64) - true
    Z /= s
    if y.ndim == 1:
        Z[:, y, cols] -= 1.0
    else:
        flat = Z.reshape(-1)
        flat[(np.arange(k)[:, None] * (C * m) + y * m + np.arange(m)[None, :]).reshape(-1)] -= 1.0
    return loss


class _Penalty:
    """The per-model L2 and linear terms added to the mean cross-entropy."""

    def __init__(self, R, P, l2, linear):
        self.l2 = np.broadcast_to(np.asarray(l2, dtype=np.float64), (R,)).copy()
        if not (np.isfinite(self.l2).all() and (self.l2 >= 0).all()):
            raise ValueError("l2 must be finite and >= 0")
        self.linear = None
        if linear is not None:
            lin = np.asarray(linear, dtype=np.float64)
            if lin.size != R * P or not np.isfinite(lin).all():
                raise ValueError(f"linear must hold {R} x {P} finite values, got shape {lin.shape}")
            self.linear = lin.reshape(R, P)

    def add(self, idx, thetas, ce, grad):
        l2 = self.l2[idx]
        f = ce + 0.5 * l2 * _rowdot(thetas, thetas)
        grad += l2[:, None] * thetas
        if self.linear is not None:
            lin = self.linear[idx]
            f += _rowdot(lin, thetas)
            grad += lin
        return f, grad


class SharedDesign:
    """Evaluator of R problems on one design matrix X (n, D), labels y (n,): ``(idx, θ (k, D·C), single)`` ->
    ``(J (k,), ∇J (k, D·C))`` for the models ``idx``, logits of all of them from one GEMM per row chunk."""

    def __init__(self, X, y, n_classes, l2, linear=None, *, n_models, float32=False, slots=None, n_slots=None):
        self.X, self.y, self.C, _ = _check_training(X, y, n_classes, 0.0)
        self.n, self.D = self.X.shape
        self.R = int(n_models)
        self.penalty = _Penalty(self.R, self.D * self.C, l2, linear)
        self.has_float32 = bool(float32)
        self.X32 = None
        if float32 and self.X.size * 4 <= FLOAT32_MAX_BYTES:
            self.X32 = self.X.astype(np.float32)
        # float32 layout: model r always in rows slots[r]·C … of a stack of n_slots·C rows (module docstring)
        self.slots = np.arange(self.R) if slots is None else np.asarray(slots, dtype=np.int64).reshape(-1)
        self.n_slots = self.R if n_slots is None else int(n_slots)
        if (self.slots.shape != (self.R,) or len(set(self.slots.tolist())) != self.R
                or not ((0 <= self.slots) & (self.slots < self.n_slots)).all()):
            raise ValueError(f"slots must be {self.R} distinct integers in [0, {self.n_slots}), got {slots!r}")

    def __call__(self, idx, thetas, single=False):
        k, D, C = len(idx), self.D, self.C
        dt = np.float32 if single else np.float64
        convert = single and self.X32 is None  # float32 chunks converted on the fly (no full copy)
        X = self.X32 if single and not convert else self.X
        # float64: the k models packed (every row's bits are independent of its position, measured); float32:
        # every model in its own fixed slot of a fixed-size stack (sgemm's rows depend on position and size)
        pos = self.slots[idx] if single else np.arange(k)
        used = (self.n_slots if single else k) * C
        rows = used + (-used) % ROW_PAD
        WT = np.zeros((rows, D), dtype=dt)
        WT[:used].reshape(-1, C, D)[pos] = thetas.reshape(k, D, C).transpose(0, 2, 1)
        G = np.zeros((rows, D), dtype=dt)
        ce = np.zeros(k)
        step = ROW_CHUNK
        for a in range(0, self.n, step):
            Xc = X[a : a + step].astype(np.float32) if convert else X[a : a + step]
            Z = WT @ Xc.T  # (rows, m), C-contiguous; the padding rows and empty slots stay 0
            Zs = Z[:used].reshape(-1, C, Z.shape[1])
            if single:  # the active slots, gathered (the empty ones keep logits 0 and add nothing to G)
                P = Zs[pos]
                ce += _ce_stack(P, self.y[a : a + step])
                Zs[pos] = P
            else:
                ce += _ce_stack(Zs, self.y[a : a + step])
            G += Z @ Xc
        grad = G[:used].reshape(-1, C, D)[pos].transpose(0, 2, 1).reshape(k, D * C).astype(np.float64) / self.n
        return self.penalty.add(idx, thetas, ce / self.n, grad)


class BlockDesign:
    """Evaluator of T problems on T row blocks Xs (T, n, D), labels ys (T, n) (subsample-and-aggregate
    members): one small GEMM per block on views of Xs (no gathered copy), cross-entropy vectorised."""

    def __init__(self, Xs, ys, n_classes, l2=0.0, linear=None):
        Xs = np.asarray(Xs, dtype=np.float64)
        if Xs.ndim != 3 or 0 in Xs.shape:
            raise ValueError(f"Xs must be 3-D (T, n, D) with T, n, D >= 1, got shape {Xs.shape}")
        self.R, self.n, self.D = Xs.shape
        ys = np.asarray(ys)
        if ys.shape != (self.R, self.n):
            raise ValueError(f"ys must have shape ({self.R}, {self.n}), got {ys.shape}")
        _, ysf, self.C, _ = _check_training(Xs.reshape(-1, self.D), ys.reshape(-1), n_classes, 0.0)
        self.Xs, self.ys = Xs, ysf.reshape(self.R, self.n)
        self.penalty = _Penalty(self.R, self.D * self.C, l2, linear)
        self.has_float32 = False

    def __call__(self, idx, thetas, single=False):
        k, D, C, n = len(idx), self.D, self.C, self.n
        WT = np.ascontiguousarray(thetas.reshape(k, D, C).transpose(0, 2, 1))
        Z = np.empty((k, C, n))
        for i, t in enumerate(idx):
            np.matmul(WT[i], self.Xs[t].T, out=Z[i])
        ce = _ce_stack(Z, self.ys[idx])
        G = np.empty((k, C, D))
        for i, t in enumerate(idx):
            np.matmul(Z[i], self.Xs[t], out=G[i])
        grad = G.transpose(0, 2, 1).reshape(k, D * C) / n
        return self.penalty.add(idx, thetas, ce / n, grad)


class Preconditioned:
    """A lockstep evaluator in the whitened coordinates φ of :class:`dpbench.learn.softmax.KroneckerWhitening`
    (L-BFGS on φ = L-BFGS on θ with initial inverse Hessian (A ⊗ B + l2·I)⁻¹, the Kronecker-factored
    curvature of :func:`dpbench.learn.softmax.softmax_curvature` plus the L2 term). Returns ``(f, ∇_φ J,
    ‖∇_θ J‖₂)``: the stopping rule certifies the θ-gradient, so the certificate ‖∇J(θ̂)‖₂ ≤ τ is unchanged.
    Each model is transformed on its own (batch-invariant bits)."""

    def __init__(self, inner, curvature: dict, l2: float):
        self.inner = inner
        self.R, self.D, self.C = inner.R, inner.D, inner.C
        self.has_float32 = inner.has_float32
        self.w = KroneckerWhitening(curvature, l2, self.D, self.C)

    def _map(self, xs, fn):
        return np.stack([fn(x) for x in xs]) if len(xs) else xs.copy()

    def to_theta(self, phis):
        return self._map(phis, self.w.to_theta)

    def to_phi(self, thetas):
        return self._map(thetas, self.w.to_phi)

    def __call__(self, idx, phis, single=False):
        f, g = self.inner(idx, self.to_theta(phis), single)
        return f, self._map(g, self.w.grad_to_phi), np.linalg.norm(g, axis=1)


def _two_loop(g, S, Y, rho, head, filled, idx):
    """L-BFGS direction −H g for the models ``idx`` (g: their gradients, (k, P)) from the per-model ring
    memories S, Y (R, m, P) (newest pair at slot head−1), 1/(sᵀy) in rho (R, m) and the number of stored
    pairs ``filled`` (R,); only one slot of the k memories is gathered at a time."""
    k = len(idx)
    m = S.shape[1]
    head, filled = head[idx], filled[idx]
    q = g.copy()
    al = np.zeros((k, m))
    slots = [(head - 1 - j) % m for j in range(m)]
    for j in range(m):
        valid = j < filled
        if not valid.any():
            break
        sl = slots[j]
        a = np.where(valid, rho[idx, sl] * _rowdot(S[idx, sl], q), 0.0)
        al[:, j] = a
        q -= a[:, None] * Y[idx, sl]
    yn = Y[idx, slots[0]]
    yy = _rowdot(yn, yn)
    gamma = np.where(filled > 0, 1.0 / np.maximum(rho[idx, slots[0]] * yy, 1e-300), 1.0)  # H0 = (sᵀy/yᵀy)·I
    r = q * gamma[:, None]
    for j in reversed(range(m)):
        valid = j < filled
        if not valid.any():
            continue
        sl = slots[j]
        b = np.where(valid, rho[idx, sl] * _rowdot(Y[idx, sl], r), 0.0)
        r += (al[:, j] - b)[:, None] * S[idx, sl]
    return -r


def _backtrack(alpha, f0, d0, ft, dt):
    """Safeguarded cubic step in [0.1α, 0.5α] from φ(0)=f0, φ'(0)=d0, φ(α)=ft, φ'(α)=dt (Nocedal & Wright
    Eq. 3.59); a non-finite φ(α) gives 0.1α."""
    with np.errstate(all="ignore"):
        d1 = d0 + dt - 3 * (f0 - ft) / alpha
        disc = d1 * d1 - d0 * dt
        d2 = np.sqrt(np.maximum(disc, 0.0))
        new = alpha - alpha * (dt + d2 - d1) / (dt - d0 + 2 * d2)
        quad = -d0 * alpha * alpha / (2 * (ft - f0 - d0 * alpha))
        new = np.where((disc >= 0) & np.isfinite(new), new, quad)
        new = np.where(np.isfinite(new) & np.isfinite(ft), new, 0.1 * alpha)
    return np.clip(new, 0.1 * alpha, 0.5 * alpha)


def lbfgs_many(evaluate, x0, *, grad_norm_tol=None, gtol=1e-5, ftol=2.220446049250313e-09, maxiter=2000,
               maxcor=10, restarts=3, float32=False):
    """Minimise R independent objectives in lockstep (module docstring).

    ``evaluate(idx, X (k, P), single)`` returns ``(f (k,), G (k, P))`` (float64) for the models ``idx``
    (``single``: float32 arithmetic allowed), or ``(f, G, norms (k,))`` with the gradient norms that
    ``grad_norm_tol`` tests (a :class:`Preconditioned` evaluator: the norms in the original parameters);
    ``x0`` (R, P) the starts. With ``grad_norm_tol`` (a number or
    (R,) array): stop model r at the first evaluated point with float64 ‖∇J_r‖₂ ≤ τ_r, within
    ``maxiter·(restarts+1)`` iterations, the curvature memory reset after a failed line search (at most
    ``restarts`` times); ``RuntimeError`` if a model cannot reach it. Otherwise scipy L-BFGS-B's rules: stop at
    max|∇J| ≤ ``gtol``, relative decrease ≤ ``ftol``, ``maxiter`` iterations or a failed line search
    (``converged=False``). Returns ``(X (R, P), [FitInfo] * R)``."""
    t0 = time.perf_counter()
    x0 = np.array(x0, dtype=np.float64)
    R, P = x0.shape
    m = int(maxcor)
    by_norm = grad_norm_tol is not None
    tol = np.broadcast_to(np.asarray(grad_norm_tol if by_norm else np.inf, dtype=np.float64), (R,)).copy()
    if by_norm and not (np.isfinite(tol).all() and (tol > 0).all()):
        raise ValueError(f"grad_norm_tol must be positive and finite, got {grad_norm_tol!r}")
    single = np.full(R, bool(float32 and by_norm))
    x, f, g = x0.copy(), np.zeros(R), np.zeros((R, P))
    xt, d = x0.copy(), np.zeros((R, P))
    alpha, f0, d0 = np.ones(R), np.zeros(R), np.zeros(R)
    searching = np.zeros(R, bool)  # False: the next evaluation is accepted as is (start, switch to float64)
    have = np.zeros(R, bool)  # x, f, g hold an accepted point
    S, Y = np.zeros((R, m, P)), np.zeros((R, m, P))
    rho, head, filled = np.zeros((R, m)), np.zeros(R, np.int64), np.zeros(R, np.int64)
    nit, nfev, nls, resets = (np.zeros(R, np.int64) for _ in range(4))
    done, ok = np.zeros(R, bool), np.zeros(R, bool)
    gnorm, gmax, message = np.full(R, np.inf), np.full(R, np.inf), [""] * R
    best, best_norm = x0.copy(), np.full(R, np.inf)
    out = x0.copy()
    cap = int(maxiter) * (int(restarts) + 1 if by_norm else 1)

    def finish(r, converged, msg, point):
        done[r], ok[r], message[r] = True, converged, msg
        out[r] = point

    while True:
        act = np.flatnonzero(~done)
        if not act.size:
            break
        ft, gt, gn = np.empty(act.size), np.empty((act.size, P)), np.empty(act.size)
        for prec in (True, False):
            sel = np.flatnonzero(single[act] == prec)
            if sel.size:
                res = evaluate(act[sel], xt[act[sel]], prec)
                ft[sel], gt[sel] = res[0], res[1]
                # the norm the stopping rule certifies: ‖∇J‖₂ in the original parameters (a preconditioned
                # evaluator returns it as a third element), else the norm of the gradient it returns
                gn[sel] = res[2] if len(res) > 2 else np.linalg.norm(res[1], axis=1)
        nfev[act] += 1
        keep = np.ones(act.size, bool)
        if by_norm:
            for i in np.flatnonzero(~single[act] & (gn < best_norm[act])):
                best[act[i]], best_norm[act[i]] = xt[act[i]], gn[i]
            for i in np.flatnonzero(~single[act] & (gn <= tol[act])):
                r = act[i]
                gnorm[r], gmax[r], f[r] = gn[i], float(np.max(np.abs(gt[i]))), ft[i]
                finish(r, True, f"‖∇J‖₂ = {gn[i]:.3g} ≤ {tol[r]:.3g}", xt[r])
                keep[i] = False
            switch = keep & single[act] & (gn <= FLOAT32_SWITCH * tol[act])
            if switch.any():  # continue in float64 from this point (evaluated again, accepted as is)
                r = act[switch]
                single[r], searching[r] = False, False
                keep &= ~switch
        act, ft, gt, gn = act[keep], ft[keep], gt[keep], gn[keep]
        if not act.size:
            continue
        if not np.isfinite(ft).all() and (~searching[act] & ~np.isfinite(ft)).any():
            raise FloatingPointError("non-finite objective at a start point")
        # acceptance
        dt_ = _rowdot(gt, d[act])
        srch = searching[act]
        a, fa, d0a = alpha[act], f0[act], d0[act]
        eps_f = np.where(single[act], 100 * np.finfo(np.float32).eps, 100 * np.finfo(np.float64).eps) * np.abs(fa)
        armijo = ft <= fa + _ARMIJO * a * d0a
        approx_wolfe = (ft <= fa + eps_f) & (dt_ >= _AW_SIGMA * d0a) & (dt_ <= (2 * _AW_DELTA - 1) * d0a)
        accept = ~srch | (np.isfinite(ft) & (armijo | approx_wolfe))
        # rejected: backtrack, or give up on this direction
        rej = np.flatnonzero(~accept)
        new_dir = np.zeros(act.size, bool)
        if rej.size:
            rr = act[rej]
            nls[rr] += 1
            alpha[rr] = _backtrack(a[rej], fa[rej], d0a[rej], ft[rej], dt_[rej])
            xt[rr] = x[rr] + alpha[rr, None] * d[rr]
            failed = rej[nls[rr] > _MAX_BACKTRACK]
            for i in failed:
                r = act[i]
                if single[r]:  # float32 precision exhausted: continue in float64 from the accepted point
                    single[r], searching[r], xt[r] = False, False, x[r]
                elif by_norm and resets[r] < restarts:
                    resets[r] += 1
                    filled[r] = 0
                    searching[r], xt[r] = False, best[r]  # restart from the best point, fresh memory
                elif by_norm:
                    raise RuntimeError(f"lockstep L-BFGS: model {r} did not reach ‖∇J‖₂ ≤ {tol[r]:.3g} (best "
                                       f"{best_norm[r]:.3g}): line search failed after {restarts} restarts")
                else:
                    finish(r, False, "ABNORMAL_TERMINATION_IN_LNSRCH", x[r])
        # accepted: update memory and the point
        acc = np.flatnonzero(accept)
        if acc.size:
            ra = act[acc]
            upd = acc[have[ra] & srch[acc]]
            if upd.size:
                ru = act[upd]
                s_ = xt[ru] - x[ru]
                y_ = gt[upd] - g[ru]
                sy = _rowdot(s_, y_)
                yy = _rowdot(y_, y_)
                good = sy > 1e-10 * yy
                rg = ru[good]
                S[rg, head[rg]] = s_[good]
                Y[rg, head[rg]] = y_[good]
                rho[rg, head[rg]] = 1.0 / sy[good]
                head[rg] = (head[rg] + 1) % m
                filled[rg] = np.minimum(filled[rg] + 1, m)
            stepped = srch[acc]
            fprev = f[ra].copy()
            x[ra], f[ra], g[ra], have[ra] = xt[ra], ft[acc], gt[acc], True
            nit[ra[stepped]] += 1
            for j, (i, r) in enumerate(zip(acc, ra)):
                gnorm[r], gmax[r] = gn[i], float(np.max(np.abs(gt[i])))
                if by_norm:
                    if nit[r] >= cap:
                        raise RuntimeError(f"lockstep L-BFGS: model {r} did not reach ‖∇J‖₂ ≤ {tol[r]:.3g} "
                                           f"(best {best_norm[r]:.3g}) in {cap} iterations")
                    continue
                if gmax[r] <= gtol:
                    finish(r, True, "CONVERGENCE: NORM_OF_PROJECTED_GRADIENT_<=_PGTOL", x[r])
                elif stepped[j] and fprev[j] - f[r] <= ftol * max(abs(fprev[j]), abs(f[r]), 1.0):
                    finish(r, True, "CONVERGENCE: REL_REDUCTION_OF_F_<=_FACTR*EPSMCH", x[r])
                elif nit[r] >= cap:
                    finish(r, False, "STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT", x[r])
            new_dir[acc] = True
        # new directions for the models that took a step (or restarted)
        nd = act[new_dir & ~done[act]]
        if nd.size:
            dirs = _two_loop(g[nd], S, Y, rho, head, filled, nd)
            slope = _rowdot(dirs, g[nd])
            bad = ~(slope < 0)  # not a descent direction: forget the memory
            if bad.any():
                filled[nd[bad]] = 0
                dirs[bad] = -g[nd[bad]]
                slope[bad] = -_rowdot(g[nd[bad]], g[nd[bad]])
            first = filled[nd] == 0
            alpha[nd] = np.where(first, 1.0 / np.maximum(np.linalg.norm(g[nd], axis=1), 1e-300), 1.0)
            d[nd], d0[nd], f0[nd], nls[nd] = dirs, slope, f[nd], 0
            searching[nd] = True
            xt[nd] = x[nd] + alpha[nd, None] * dirs
    seconds = time.perf_counter() - t0
    infos = [FitInfo(n_iter=int(nit[r]), n_fev=int(nfev[r]), fun=float(f[r]), grad_max=float(gmax[r]),
                     converged=bool(ok[r]), message=message[r], seconds=seconds,
                     grad_norm=float(gnorm[r])) for r in range(R)]
    return out, infos


def fit_softmax_lockstep(X, y, n_classes, l2, linear=None, theta0=None, *, n_models=None, grad_norm_tol=None,
                         gtol=1e-5, ftol=2.220446049250313e-09, maxiter=2000, maxcor=10, float32=False,
                         slots=None, n_slots=None, blas_threads=None, precondition=None, return_info=False):
    """Fit R softmax models in lockstep (module docstring): the lockstep counterpart of R calls of
    :func:`dpbench.learn.fit_softmax` with the same stopping rule.

    ``X`` (n, D) shared by all models with labels ``y`` (n,), or (T, n, D) row blocks with ``ys`` (T, n) (one
    model per block). ``l2`` a number or (R,); ``linear`` None or (R, D, C); ``theta0`` None (zeros), (D, C)
    (every model) or (R, D, C). R = ``n_models`` or from the shapes. ``slots`` (R distinct integers in
    [0, ``n_slots``); default: 0…R−1 of R) place the models in the fixed float32 stack (module docstring:
    a model's float32 iterates depend only on its own problem, its slot and ``n_slots``). ``blas_threads``: BLAS
    threads during the solve (None = unchanged; results are only bit-reproducible at a fixed count — 1 gives
    the batch invariance). ``precondition``: None or :func:`softmax_curvature` near the solution — iterate in
    whitened coordinates (:class:`Preconditioned`, with the models' common ``l2``); the stopping rule still
    certifies ‖∇_θ J‖₂ (with ``grad_norm_tol``; shared X only). Returns θ (R, D, C) or ``(θ, [FitInfo] * R)``."""
    X = np.asarray(X) if not isinstance(X, np.ndarray) else X
    C = int(n_classes)
    if X.ndim == 3:
        ev = BlockDesign(X, y, C, l2, linear)
    else:
        R = n_models
        for a in (linear, theta0):
            if R is None and a is not None and np.ndim(a) == 3:
                R = np.shape(a)[0]
        if R is None:
            R = np.size(l2)
        ev = SharedDesign(X, y, C, l2, linear, n_models=R, float32=float32 and grad_norm_tol is not None,
                          slots=slots, n_slots=n_slots)
    R, D = ev.R, ev.D
    P = D * C
    if theta0 is None:
        x0 = np.zeros((R, P))
    else:
        x0 = np.broadcast_to(np.asarray(theta0, dtype=np.float64).reshape(-1, P), (R, P)).copy()
    with blas_thread_limit(blas_threads):
        if precondition is not None:
            l2s = np.broadcast_to(np.asarray(l2, dtype=np.float64), (R,))
            if X.ndim == 3 or grad_norm_tol is None or not (l2s == l2s[0]).all():
                raise ValueError("precondition needs a shared X, one l2 for all models and grad_norm_tol (the "
                                 "certified stopping rule)")
            ev = Preconditioned(ev, precondition, float(l2s[0]))
            x0 = ev.to_phi(x0)
        xs, infos = lbfgs_many(ev, x0, grad_norm_tol=grad_norm_tol, gtol=gtol, ftol=ftol, maxiter=maxiter,
                               maxcor=maxcor, float32=ev.has_float32)
        if precondition is not None:
            xs = ev.to_theta(xs)
    theta = xs.reshape(R, D, C)
    if not math.isfinite(float(np.abs(theta).max())):
        raise FloatingPointError("lockstep L-BFGS produced non-finite parameters")
    return (theta, infos) if return_info else theta
