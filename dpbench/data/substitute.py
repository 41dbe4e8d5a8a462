"""MNIST substitute: InfiMNIST-style random deformations of scikit-learn's bundled digits (docs/sources.md).

The base is ``sklearn.datasets.load_digits()`` (1797 images of 8x8, values 0..16; no download).

Recipe (version ``v1``; any change to it must bump :data:`VERSION`, which is part of the cache path):

1. **Split the originals first**: stratified 80/20 per class, with the seeded stream
   ``generator(seed, "deformed-digits/originals-split")``, so no test writer leaks into training.
2. **Upsample to MNIST geometry**: each original is scaled to [0, 1] (/16), zoomed 8x8 -> 20x20 with a cubic
   spline (``scipy.ndimage.zoom``, ``grid_mode=True``), clipped to [0, 1] and centred in a 28x28 frame with a
   4-pixel blank border -- the layout of MNIST (digits in a 20x20 box in 28x28), D = 784. The border keeps
   strokes from being cut off by the deformations.
3. **Deform** example ``i`` of ``split`` with its own stream ``generator(seed, f"deformed-digits/{split}/{i}")``
   (so every example depends only on ``(seed, split, i)``; any range can be generated alone, in any order):

   * affine map about the image centre: rotation uniform in ±12°, isotropic scale uniform in [0.9, 1.1],
     shear uniform in ±0.15 (col += shear * row), shift uniform in ±20/16 = ±1.25 px on each axis (1/16 of
     the 20-px digit box, i.e. ±0.5 px of the 8x8 originals);
   * elastic deformation (Simard et al., 2003): a displacement field with i.i.d. uniform(-1, 1) entries,
     smoothed by a Gaussian of sigma = 4 px and scaled by alpha = 8 (displacement std about 0.33 px: a mild
     local wobble of the strokes);
   * bilinear resampling (``scipy.ndimage.map_coordinates``, order 1, zero outside), clipped to [0, 1]
     and quantised to 8 bits (k/255) like MNIST pixels.

   Calibration: with the shift of ±28/16 px of the frame or Simard's alpha = 34, a linear softmax model
   reached only 0.63-0.88 test accuracy (MNIST: about 0.92); the values above give about 0.91, close to
   MNIST. Digits stay clearly legible.

4. **Which original**: train example ``i`` deforms training original ``perm[i % n_orig_train]`` where ``perm``
   is a seeded permutation (``"deformed-digits/train/order"``); every training example is deformed (like
   the InfiMNIST patterns 70000+ of vdm2020's MNIST-1M). Test example ``j < n_orig_test`` is held-out
   original ``j`` *undeformed*; later test examples are deformed copies of held-out original
   ``j % n_orig_test``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from functools import cached_property
from pathlib import Path

import numpy as np

from dpbench.data.cache import Entry, open_entry
from dpbench.data.raw import RawSplit
from dpbench.rng import generator

log = logging.getLogger(__name__)

VERSION = "v1"
NAME = "deformed-digits"
VARIANT = "substitute:deformed-digits-28x28"
DESCRIPTION = "SUBSTITUTE: InfiMNIST-style deformed scikit-learn digits (28×28), not MNIST"

SIZE = 28
BOX = 20  # digits occupy a BOX x BOX square centred in SIZE x SIZE, as in MNIST
DEFAULT_DEFORMATION = {
    "rotation_deg": 12.0,
    "scale_range": (0.9, 1.1),
    "shear": 0.15,
    "shift_px": BOX / 16,
    "elastic_alpha": 8.0,
    "elastic_sigma": 4.0,
}
_CHUNK = 2048


class DeformedDigits:
    """Deterministic generator of deformed 28x28 digits; see the module docstring for the recipe.

    ``images(split, start, stop)`` returns float32 pixels in [0, 1] of shape (stop - start, 784) and int64
    labels; example ``i`` is the same whatever range it is generated in.
    """

    def __init__(self, seed: int = 0, *, test_fraction: float = 0.2, deformation: dict | None = None):
        if not 0.0 < test_fraction < 1.0:
            raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}")
        self.seed = int(seed)
        self.test_fraction = float(test_fraction)
        self.deformation = dict(DEFAULT_DEFORMATION)
        if deformation:
            unknown = set(deformation) - set(DEFAULT_DEFORMATION)
            if unknown:
                raise ValueError(f"unknown deformation parameters {sorted(unknown)}; known: {sorted(DEFAULT_DEFORMATION)}")
            self.deformation.update(deformation)
        generator(self.seed, "check")  # validates the seed early

    # ------------------------------------------------------------------ originals
    @cached_property
    def _originals(self) -> tuple[np.ndarray, np.ndarray]:
        from scipy import ndimage

        from sklearn.datasets import load_digits

        digits = load_digits()
        X = np.clip(digits.images.astype(np.float64) / 16.0, 0.0, 1.0)  # (1797, 8, 8)
        small = ndimage.zoom(X, (1, BOX / 8, BOX / 8), order=3, mode="grid-constant", grid_mode=True)
        pad = (SIZE - BOX) // 2
        big = np.zeros((X.shape[0], SIZE, SIZE))
        big[:, pad : pad + BOX, pad : pad + BOX] = np.clip(small, 0.0, 1.0)
        return big, digits.target.astype(np.int64)

    @cached_property
    def _split_indices(self) -> dict[str, np.ndarray]:
        _, y = self._originals
        rng = generator(self.seed, f"{NAME}/originals-split")
        train, test = [], []
        for c in np.unique(y):
            idx = rng.permutation(np.flatnonzero(y == c))
            n_test = int(round(self.test_fraction * idx.size))
            test.append(idx[:n_test])
            train.append(idx[n_test:])
        train_idx = np.sort(np.concatenate(train))
        test_idx = np.sort(np.concatenate(test))
        order = generator(self.seed, f"{NAME}/train/order").permutation(train_idx.size)
        return {"train": train_idx[order], "test": test_idx}

    def originals(self, split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indices into ``load_digits()``, 28x28 upsampled images, labels) of the originals of ``split``."""
        idx = self._split_indices[_check_split(split)]
        big, y = self._originals
        return idx, big[idx], y[idx]

    # ------------------------------------------------------------------ generation
    def _params(self, split: str, indices: np.ndarray):
        """Per-example affine matrices (n, 2, 2), shifts (n, 2) and raw elastic noise (n, 2, S, S)."""
        d = self.deformation
        n = indices.size
        ang = np.empty(n)
        scale = np.empty(n)
        shear = np.empty(n)
        shift = np.empty((n, 2))
        noise = np.empty((n, 2, SIZE, SIZE))
        for k, i in enumerate(indices):
            rng = generator(self.seed, f"{NAME}/{split}/{int(i)}")
            u = rng.uniform(-1.0, 1.0, size=5)
            ang[k] = np.deg2rad(d["rotation_deg"]) * u[0]
            lo, hi = d["scale_range"]
            scale[k] = lo + (hi - lo) * (u[1] + 1.0) / 2.0
            shear[k] = d["shear"] * u[2]
            shift[k] = d["shift_px"] * u[3:5]
            noise[k] = rng.uniform(-1.0, 1.0, size=(2, SIZE, SIZE))
        # forward map in (row, col) = (y, x): rotation . shear . scale; we need its inverse for resampling
        c, s = np.cos(ang), np.sin(ang)
        R = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)
        Sh = np.zeros((n, 2, 2))
        Sh[:, 0, 0] = Sh[:, 1, 1] = 1.0
        Sh[:, 1, 0] = shear  # col += shear * row
        F = R @ Sh * scale[:, None, None]
        return np.linalg.inv(F), shift, noise

    def _deform(self, split: str, base: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """Deform images ``base`` (n, S, S) with the streams of ``indices``; returns (n, S, S) in [0, 1]."""
        from scipy import ndimage

        n = indices.size
        Finv, shift, noise = self._params(split, indices)
        d = self.deformation
        disp = ndimage.gaussian_filter(noise, sigma=(0, 0, d["elastic_sigma"], d["elastic_sigma"]), mode="constant")
        disp *= d["elastic_alpha"]
        centre = (SIZE - 1) / 2.0
        grid = np.indices((SIZE, SIZE), dtype=np.float64) - centre  # (2, S, S)
        # output pixel p samples the source at Finv (p + elastic(p) - centre - shift) + centre
        q = grid[None] + disp - shift[:, :, None, None]  # (n, 2, S, S)
        src = np.einsum("nij,njhw->nihw", Finv, q) + centre
        coords = np.empty((3, n, SIZE, SIZE))
        coords[0] = np.arange(n, dtype=np.float64)[:, None, None]
        coords[1:] = src.transpose(1, 0, 2, 3)
        out = ndimage.map_coordinates(base, coords, order=1, mode="constant", cval=0.0)
        return np.clip(out, 0.0, 1.0)

    def _chunk(self, split: str, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        idx_orig, imgs, labels = self.originals(split)
        m = idx_orig.size
        i = np.arange(start, stop)
        which = i % m
        out = np.empty((i.size, SIZE, SIZE))
        deform = np.ones(i.size, dtype=bool) if split == "train" else i >= m
        if (~deform).any():
            out[~deform] = imgs[which[~deform]]
        if deform.any():
            out[deform] = self._deform(split, imgs[which[deform]], i[deform])
        q = np.round(out.reshape(i.size, SIZE * SIZE) * 255.0).astype(np.uint8)
        return q, labels[which]

    def images_uint8(
        self, split: str, start: int, stop: int, *, n_jobs: int = 1, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Like :meth:`images` but with pixels as uint8 0..255 (the stored form). ``out``: optional
        preallocated (stop - start, 784) uint8 array (e.g. a memmap) to fill in place."""
        split = _check_split(split)
        start, stop = int(start), int(stop)
        if not 0 <= start <= stop:
            raise ValueError(f"need 0 <= start <= stop, got start={start}, stop={stop}")
        n = stop - start
        X = np.empty((n, SIZE * SIZE), dtype=np.uint8) if out is None else out
        if X.shape != (n, SIZE * SIZE):
            raise ValueError(f"out must have shape {(n, SIZE * SIZE)}, got {X.shape}")
        y = np.empty(n, dtype=np.int64)
        bounds = [(a, min(a + _CHUNK, stop)) for a in range(start, stop, _CHUNK)]
        self._split_indices  # build shared state once before any worker copies
        if n_jobs != 1 and len(bounds) > 1:
            from joblib import Parallel, delayed

            parts = Parallel(n_jobs=n_jobs)(delayed(self._chunk)(split, a, b) for a, b in bounds)
        else:
            parts = (self._chunk(split, a, b) for a, b in bounds)
        for (a, b), (Xc, yc) in zip(bounds, parts):
            X[a - start : b - start] = Xc
            y[a - start : b - start] = yc
        return X, y

    def images(self, split: str, start: int, stop: int, *, n_jobs: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Examples ``start..stop-1`` of ``split`` ("train"|"test"): float32 (n, 784) in [0, 1], int64 labels."""
        X, y = self.images_uint8(split, start, stop, n_jobs=n_jobs)
        return _to_float(X), y


def _check_split(split: str) -> str:
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    return split


def _to_float(X: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """uint8 -> float32 / 255 in chunks (works on memmaps without a second full-size temporary)."""
    out = np.empty(X.shape, dtype=np.float32)
    for a in range(0, X.shape[0], chunk):
        np.multiply(X[a : a + chunk], np.float32(1.0 / 255.0), out=out[a : a + chunk], dtype=np.float32)
    return out


def substitute_params(seed: int, deformation: dict | None = None) -> dict:
    """The parameters that determine every example (hashed into the cache path; sizes are not part of it
    because example ``i`` does not depend on how many are generated)."""
    d = dict(DEFAULT_DEFORMATION)
    d.update(deformation or {})
    return {
        "name": NAME,
        "version": VERSION,
        "seed": int(seed),
        "size": SIZE,
        "box": BOX,
        "deformation": {k: list(v) if isinstance(v, tuple) else v for k, v in sorted(d.items())},
        "base": "sklearn.datasets.load_digits 1797x8x8",
    }


def substitute_cache_dir(cache_dir: str | os.PathLike, seed: int) -> Path:
    """``cache_dir/deformed-digits-v1/<params-hash>`` for this seed and the current recipe."""
    params = substitute_params(seed)
    h = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]
    return Path(cache_dir).expanduser() / f"{NAME}-{VERSION}" / h


def _build_split(gen: DeformedDigits, tmp: Path, previous: Entry | None, split: str, n: int, n_jobs: int) -> int:
    """Write ``tmp/{X,y}_{split}.npy`` with ``max(n, rows already cached)`` rows, copying the cached rows of
    ``previous`` (hard links when nothing is added) and generating only the missing ones. Returns the rows."""
    have = previous.rows(f"X_{split}") if previous is not None else 0
    names = (f"X_{split}.npy", f"y_{split}.npy")
    if have >= n:  # this split is already large enough: reuse its files as they are (never shrink)
        for name in names:
            try:
                os.link(previous.folder / name, tmp / name)
            except OSError:
                shutil.copyfile(previous.folder / name, tmp / name)
        return have
    t0 = time.perf_counter()
    log.info("generating %s %s examples %d..%d (seed %d) into %s", NAME, split, have, n, gen.seed, tmp.parent)
    # fill a memmapped .npy chunk by chunk, so a large N never sits in memory twice
    mm = np.lib.format.open_memmap(tmp / names[0], mode="w+", dtype=np.uint8, shape=(n, SIZE * SIZE))
    y = np.empty(n, dtype=np.int64)
    if have:
        old_X, old_y = previous.arrays[f"X_{split}"], previous.arrays[f"y_{split}"]
        for a in range(0, have, 65536):
            mm[a : min(a + 65536, have)] = old_X[a : a + 65536]
        y[:have] = old_y[:have]
    _, y[have:] = gen.images_uint8(split, have, n, n_jobs=n_jobs, out=mm[have:])
    mm.flush()
    del mm
    np.save(tmp / names[1], y)
    log.info("generated %d %s examples in %.1f s", n - have, split, time.perf_counter() - t0)
    return n


def _open_substitute(cache_dir, n_train: int, n_test: int, seed: int, n_jobs: int) -> Entry:
    folder = substitute_cache_dir(cache_dir, seed)
    want = {"train": int(n_train), "test": int(n_test)}

    def accept(entry: Entry) -> bool:
        ok = entry.meta.get("params") == substitute_params(seed)
        for split, n in want.items():
            ok = ok and entry.rows(f"X_{split}") >= n and entry.rows(f"y_{split}") == entry.rows(f"X_{split}")
            ok = ok and entry.manifest["files"][f"X_{split}.npy"]["shape"][1:] == [SIZE * SIZE]
        return ok

    def build(tmp: Path, previous: Entry | None) -> dict:
        if previous is not None and previous.meta.get("params") != substitute_params(seed):
            previous = None
        gen = DeformedDigits(seed)
        rows = {split: _build_split(gen, tmp, previous, split, n, n_jobs) for split, n in want.items()}
        (tmp / "params.json").write_text(json.dumps(substitute_params(seed), indent=1, sort_keys=True))
        return {"params": substitute_params(seed), "rows": rows}

    return open_entry(folder, build, accept=accept, what="substitute cache")


#: training rows generated between two commits to the cache by :func:`ensure_substitute`: an interrupted
#: generation of many rows (Fig. 4's MNIST-1M, 940,000 rows) resumes from the last committed step, not from zero
RESUME_STEP = 200_000


def ensure_substitute(cache_dir: str | os.PathLike, n_train: int, n_test: int, seed: int = 0, *,
                      n_jobs: int = 1, step: int = RESUME_STEP) -> Path:
    """Make the cache hold at least ``n_train`` / ``n_test`` examples (generating only missing rows) without
    loading them; returns the cache folder. The training rows are added ``step`` at a time, each step committed
    to the cache (example ``i`` does not depend on the step), so a stopped generation resumes from its last step;
    a step the cache already holds costs a look at its manifest."""
    if step < 1:
        raise ValueError(f"step must be positive, got {step}")
    for n in range(step, int(n_train), step):
        _open_substitute(cache_dir, n, n_test, seed, n_jobs)
    return _open_substitute(cache_dir, n_train, n_test, seed, n_jobs).folder


def load_substitute(
    cache_dir: str | os.PathLike,
    n_train: int = 60_000,
    n_test: int = 10_000,
    seed: int = 0,
    *,
    n_jobs: int = 1,
) -> RawSplit:
    """The deformed-digits substitute for MNIST: float32 pixels in [0, 1], D = 784, int64 labels 0..9.

    Examples are cached as uint8 under ``cache_dir/deformed-digits-v1/<params-hash>/`` in
    ``{X_train,y_train,X_test,y_test}.npy`` with a ``manifest.json`` (one cache entry of
    :mod:`dpbench.data.cache`: built under a lock in a temporary folder and renamed into place, validated on
    read). Example ``i`` does not depend on the requested size, so the cache holds the largest size asked for
    so far (it never shrinks); a smaller request reads its first rows and a larger one generates only the
    missing rows.
    """
    if n_train < 1 or n_test < 1:
        raise ValueError(f"n_train and n_test must be positive, got {n_train}, {n_test}")
    entry = _open_substitute(cache_dir, n_train, n_test, seed, n_jobs)
    arrays = {}
    for split, n in (("train", int(n_train)), ("test", int(n_test))):
        X, y = entry.arrays[f"X_{split}"], entry.arrays[f"y_{split}"]
        arrays[f"X_{split}"] = _to_float(X[:n])
        arrays[f"y_{split}"] = np.array(y[:n], dtype=np.int64)
    return RawSplit(**arrays)
