"""Feature transforms of the linear-model studies (van der Maaten & Hannun 2020: assumption 5 of §3, ‖x‖ ≤ 1;
PCA of Fig. 5a; vdm2020 errata 11–13 in docs/studies/vdm2020.md#errata).

Order used by the studies: ``first_classes`` -> ``unit_ball_normalise`` -> (``pca_project``) ->
(``add_bias_feature``); wu2016 ch. 3: (``gaussian_random_projection``) -> ``unit_sphere_rows``. Every function returns new arrays and keeps every row at L2 norm <= 1 (checked in
float64; rows that rounding pushes a few ulps past 1 are shrunk onto the sphere).
"""

from __future__ import annotations

import numpy as np

from dpbench.rng import generator


def row_norms(X: np.ndarray) -> np.ndarray:
    """L2 norm of every row, accumulated in float64."""
    X = np.asarray(X)
    return np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))


def _as_float(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"expected a 2-d array (n, D), got shape {X.shape}")
    return X.astype(X.dtype if np.issubdtype(X.dtype, np.floating) else np.float64, copy=True)


def _shrink_to_unit(X: np.ndarray) -> np.ndarray:
    """In place: rescale rows with norm > 1 onto the unit sphere (with a few ulps of slack)."""
    for _ in range(3):
        norms = row_norms(X)
        over = norms > 1.0
        if not over.any():
            return X
        shrink = (1.0 - 4 * np.finfo(X.dtype).eps) / norms[over]
        X[over] *= shrink[:, None].astype(X.dtype)
    raise AssertionError("could not bring rows to norm <= 1")  # pragma: no cover


def unit_ball_normalise(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Divide both splits by the largest L2 norm of a *training* row; then test rows with norm > 1 are
    rescaled onto the unit sphere (vdm2020 erratum 13: the reference code divides each split by its own maximum;
    here the test split uses the training scale, and every row ends with ``||x|| <= 1``)."""
    Xtr, Xte = _as_float(X_train), _as_float(X_test)
    if Xtr.shape[1] != Xte.shape[1]:
        raise ValueError(f"train and test have different dimensions: {Xtr.shape[1]} != {Xte.shape[1]}")
    scale = float(row_norms(Xtr).max()) if Xtr.shape[0] else 0.0
    if scale > 0.0:
        Xtr *= Xtr.dtype.type(1.0 / scale)
        Xte *= Xte.dtype.type(1.0 / scale)
    return _shrink_to_unit(Xtr), _shrink_to_unit(Xte)


def add_bias_feature(X: np.ndarray) -> np.ndarray:
    """Append a constant feature and rescale: ``[x, 1] / sqrt(2)``, so ``||x|| <= 1`` implies the result
    has norm <= 1 (the exact treatment of the bias, vdm2020 erratum 11). Input rows must have norm <= 1."""
    X = _as_float(X)
    if X.shape[0] and row_norms(X).max() > 1.0 + 1e-6:
        raise ValueError("add_bias_feature needs rows with ||x|| <= 1; apply unit_ball_normalise first")
    out = np.empty((X.shape[0], X.shape[1] + 1), dtype=X.dtype)
    out[:, :-1] = X
    out[:, -1] = 1.0
    out *= out.dtype.type(1.0 / np.sqrt(2.0))
    return _shrink_to_unit(out)


def first_classes(X: np.ndarray, y: np.ndarray, C: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep the rows whose label is one of the first ``C`` classes ``0..C-1`` (vdm2020 Fig. 5b)."""
    y = np.asarray(y)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    if int(C) < 1:
        raise ValueError(f"C must be a positive number of classes, got {C}")
    keep = (y >= 0) & (y < int(C))
    if not keep.any():
        raise ValueError(f"no example has a label in 0..{int(C) - 1}")
    return X[keep], y[keep]


def pca_basis(X_fit: np.ndarray, D: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, W): the mean and top-``D`` principal directions (columns of W, signs fixed: largest-magnitude
    loading positive) of ``X_fit`` — for vdm2020 Fig. 5a a public split, disjoint from the training rows."""
    Xf = np.asarray(X_fit)
    if Xf.ndim != 2 or Xf.shape[0] < 2:
        raise ValueError(f"need a 2-d array with at least 2 rows to fit PCA, got shape {Xf.shape}")
    D = int(D)
    if not 1 <= D <= Xf.shape[1]:
        raise ValueError(f"D must lie in 1..{Xf.shape[1]} (the input dimension), got {D}")
    mean = Xf.mean(axis=0, dtype=np.float64)
    cov = np.zeros((Xf.shape[1], Xf.shape[1]))
    for a in range(0, Xf.shape[0], 65536):
        B = Xf[a : a + 65536].astype(np.float64) - mean
        cov += B.T @ B
    _, vecs = np.linalg.eigh(cov)
    W = vecs[:, ::-1][:, :D]
    W *= np.sign(W[np.abs(W).argmax(axis=0), np.arange(D)])
    return mean, W


def pca_apply(X: np.ndarray, mean: np.ndarray, W: np.ndarray) -> np.ndarray:
    """(X − mean) W in float64 chunks (float inputs keep their dtype)."""
    X = np.asarray(X)
    dtype = X.dtype if np.issubdtype(X.dtype, np.floating) else np.float64
    Z = np.empty((X.shape[0], W.shape[1]), dtype=dtype)
    for a in range(0, X.shape[0], 65536):
        Z[a : a + 65536] = (X[a : a + 65536].astype(np.float64) - mean) @ W
    return Z


def pca_project(X_train: np.ndarray, X_test: np.ndarray, D: int) -> tuple[np.ndarray, np.ndarray]:
    """Project both splits on the top-``D`` principal components of the training data (centred with the
    training mean), then re-normalise to the unit ball with :func:`unit_ball_normalise` (vdm2020's code skips
    this, so norms could reach 2). DATA-DEPENDENT: the basis and the scale come from the training rows — the
    source's preprocessing; a private pipeline fits :func:`pca_basis` on a public split instead."""
    Xtr, Xte = np.asarray(X_train), np.asarray(X_test)
    if Xtr.ndim != 2 or Xte.ndim != 2 or Xtr.shape[1] != Xte.shape[1]:
        raise ValueError(f"need 2-d train/test arrays of equal width, got {Xtr.shape} and {Xte.shape}")
    mean, W = pca_basis(Xtr, D)
    return unit_ball_normalise(pca_apply(Xtr, mean, W), pca_apply(Xte, mean, W))


def max_row_norm(X: np.ndarray, rows: np.ndarray | None = None, chunk: int = 65536) -> float:
    """Largest L2 norm among ``X[rows]`` (all rows if None), in float64, chunk by chunk."""
    idx = np.arange(X.shape[0]) if rows is None else np.asarray(rows)
    best = 0.0
    for a in range(0, idx.shape[0], chunk):
        block = np.asarray(X[idx[a : a + chunk]], dtype=np.float64)
        if block.shape[0]:
            best = max(best, float(row_norms(block).max()))
    return best


def unit_ball_rows_into(out: np.ndarray, X: np.ndarray, rows: np.ndarray, scale: float | None, bias: bool,
                        chunk: int = 65536) -> np.ndarray:
    """Fill ``out`` (float64, preallocated, possibly a memmap) with ``X[rows]`` divided by ``scale`` and
    projected into the unit ball, then (``bias``) augmented to ``[x, 1]/√2`` — row for row the same numbers
    as :func:`unit_ball_normalise` followed by :func:`add_bias_feature`, but chunked, so a large training
    set (vdm2020 Fig. 4, N = 10⁶) never exists twice in float64.

    ``scale=None``: every row is divided by its own norm instead (:func:`unit_sphere_rows`, zero rows stay
    zero) — a per-row, data-independent map: replacing one training row changes no other row."""
    rows = np.asarray(rows)
    width = X.shape[1] + (1 if bias else 0)
    if out.shape != (rows.shape[0], width) or out.dtype != np.float64:
        raise ValueError(f"out must be float64 of shape {(rows.shape[0], width)}, got {out.dtype} {out.shape}")
    inv = 1.0 / scale if scale is not None and scale > 0 else 1.0
    r2 = 1.0 / np.sqrt(2.0)
    for a in range(0, rows.shape[0], chunk):
        block = np.asarray(X[rows[a : a + chunk]], dtype=np.float64)
        if scale is None:
            block = unit_sphere_rows(block)
        else:
            block *= inv
            block = _shrink_to_unit(block)
        if bias:
            aug = np.empty((block.shape[0], width))
            aug[:, :-1] = block
            aug[:, -1] = 1.0
            aug *= r2
            block = _shrink_to_unit(aug)
        out[a : a + block.shape[0]] = block
    return out


def gaussian_projection_matrix(n_features: int, dim: int, seed: int) -> np.ndarray:
    """The (n_features, dim) float64 matrix of :func:`gaussian_random_projection`: i.i.d. N(0, 1/dim) entries
    from ``dpbench.rng.generator(seed, f"gaussian-random-projection/{n_features}x{dim}")``. It depends only on
    ``(n_features, dim, seed)``, never on the data, so projecting costs no privacy."""
    n_features, dim = int(n_features), int(dim)
    if n_features < 1 or dim < 1:
        raise ValueError(f"n_features and dim must be positive, got {n_features}, {dim}")
    rng = generator(int(seed), f"gaussian-random-projection/{n_features}x{dim}")
    return rng.standard_normal((n_features, dim)) / np.sqrt(dim)


def gaussian_random_projection(
    X_train: np.ndarray, X_test: np.ndarray, dim: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Project both splits with the same data-independent Gaussian matrix ``R`` of
    :func:`gaussian_projection_matrix` (entries N(0, 1/dim)): ``(X_train @ R, X_test @ R)``. Then
    ``E||R^T x||^2 = ||x||^2`` (Johnson-Lindenstrauss). wu2016 ch. 3 projects MNIST to 50 dimensions this way
    before :func:`unit_sphere_rows`. Computed in float64; float inputs keep their dtype, others give float64."""
    Xtr, Xte = np.asarray(X_train), np.asarray(X_test)
    if Xtr.ndim != 2 or Xte.ndim != 2 or Xtr.shape[1] != Xte.shape[1]:
        raise ValueError(f"need 2-d train/test arrays of equal width, got {Xtr.shape} and {Xte.shape}")
    R = gaussian_projection_matrix(Xtr.shape[1], dim, seed)

    def project(X: np.ndarray) -> np.ndarray:
        dtype = X.dtype if np.issubdtype(X.dtype, np.floating) else np.float64
        Z = np.empty((X.shape[0], R.shape[1]), dtype=dtype)
        for a in range(0, X.shape[0], 65536):
            Z[a : a + 65536] = X[a : a + 65536].astype(np.float64) @ R
        return Z

    return project(Xtr), project(Xte)


def unit_sphere_rows(X: np.ndarray) -> np.ndarray:
    """Every row divided by its own L2 norm (wu2016's "normalised to the unit sphere"): norms are 1 up to a
    few ulps and never above 1 (checked in float64, as elsewhere in this module).

    Zero rows stay zero: they carry no direction to keep, mapping them to a fixed vector (e.g. e1) would
    invent a feature value that the data does not have, and the DP analyses only need ``||x|| <= 1``, which a
    zero row satisfies. (After a Gaussian projection a zero row arises only from an all-zero input.)
    Float inputs keep their dtype, others give float64."""
    X = _as_float(X)
    norms = row_norms(X)
    nz = norms > 0.0
    X[nz] = (X[nz].astype(np.float64) / norms[nz, None]).astype(X.dtype)
    return _shrink_to_unit(X)


def domain_minmax(X: np.ndarray, lo, hi, log=None) -> np.ndarray:
    """Per-feature min-max scaling to [0, 1] with FIXED bounds ``lo``/``hi`` (one value per feature, or scalars)
    taken from the data's domain (documented feature ranges), never from the data: values are clipped to
    ``[lo, hi]`` and mapped to ``(x - lo)/(hi - lo)``; where ``log`` is True (one flag per feature) the map is
    ``log1p(x - lo)/log1p(hi - lo)`` instead (for heavy-tailed counts such as byte counts). Every output row
    depends on its own input row only, so replacing one row of a data set changes one row of the output:
    the map costs no privacy (unlike the training minimum and maximum, which every row would depend on).
    float64 (n, D)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"expected a 2-d array (n, D), got shape {X.shape}")
    D = X.shape[1]
    lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), (D,))
    hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), (D,))
    if not np.all(hi > lo):
        raise ValueError("domain bounds need hi > lo for every feature")
    Z = np.clip(X, lo, hi) - lo
    span = hi - lo
    if log is not None:
        lg = np.broadcast_to(np.asarray(log, dtype=bool), (D,))
        Z[:, lg] = np.log1p(Z[:, lg])
        span = np.where(lg, np.log1p(span), span)
    return Z / span
