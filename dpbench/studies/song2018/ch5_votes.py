"""song2018 chapter 5 — the teacher votes and the students (Song 2018, PhD dissertation, §5.4.1-5.4.3;
Papernot et al., "Scalable private learning with PATE", ICLR 2018, §5). The released votes of the thesis
(MNIST/SVHN/Adult ensembles of 250 teachers, Glyph ensembles of up to 5,000) can only be downloaded, so the votes
are made here:

* ``mnist`` — M real teachers trained on disjoint partitions of the MNIST training set (real MNIST when
  available, else the labelled deformed-digits substitute of :mod:`dpbench.data`), voting on the first half of the
  test set (the student's unlabelled pool, §5.4.1); the second half is held out. Teacher and student learner
  [INFERRED: the thesis uses CNNs / a semi-supervised GAN student]: one-vs-rest ridge regression on a
  data-independent Gaussian random projection of the pixels (``learner``), fitted for all teachers at once.
* ``glyph`` — SIMULATED Glyph-like votes (the Glyph data are not public): 150 classes with Zipf-like imbalance,
  a fraction of mislabelled records, per-query teacher consensus a ~ Beta (a mixture: a fraction of hard queries
  with low consensus; scaled down for larger ensembles, whose teachers see less data), votes ~ Multinomial(M,
  a·e_y + (1 − a)·c) with c a sparse Dirichlet over the other classes (confusable classes), and Gaussian
  class-mean features whose noise grows with 1 − a (hard queries are hard for the student too). Every generative choice is a config key (``ch5.glyph``). Student:
  nearest class mean [INFERRED].

Each ensemble's votes are an artefact of the study's Store keyed by content; random streams come from
:func:`dpbench.rng.generator` keyed by what is generated.
"""

from __future__ import annotations

import numpy as np

from dpbench.data import load_dataset
from dpbench.data import transforms as T
from dpbench.rng import generator, stream_key
from dpbench.store import Store, content_key

STUDY = "song2018"
VOTES_VERSION = 1


def ch5_config(config: dict) -> dict:
    return config["studies"][STUDY]["ch5"]


def _store(config):
    return Store(config["cache_dir"])


# ---------------------------------------------------------------------------------------------------------
# Glyph-like simulator
# ---------------------------------------------------------------------------------------------------------


def glyph_payload(config: dict) -> dict:
    g = ch5_config(config)["glyph"]
    return {"kind": "song2018-ch5-glyph-queries", "v": VOTES_VERSION, "seed": config["seed"], **g}


def glyph_queries(config: dict) -> dict:
    """The simulated query pool (``pool`` queries) and held-out test set (``test`` queries): true classes,
    recorded labels (with label noise), per-query consensus, features. Shared by every ensemble size."""
    p = glyph_payload(config)

    def make():
        rng = generator(config["seed"], f"song2018/ch5/glyph/{stream_key(p)}")
        m, n = int(p["classes"]), int(p["pool"]) + int(p["test"])
        prior = np.arange(1, m + 1, dtype=np.float64) ** -float(p["zipf_exponent"])
        prior /= prior.sum()
        y = rng.choice(m, size=n, p=prior)
        flip = rng.random(n) < float(p["label_noise"])
        recorded = np.where(flip, rng.integers(0, m, size=n), y)
        hard = rng.random(n) < float(p["hard_fraction"])
        a = np.where(hard, rng.beta(*map(float, p["hard_beta"]), size=n),
                     rng.beta(*map(float, p["consensus_beta"]), size=n))
        means = rng.normal(0.0, 1.0, size=(m, int(p["feature_dim"])))
        scale = float(p["feature_noise"]) * (1.0 + float(p["hardness"]) * (1.0 - a))
        X = means[y] + scale[:, None] * rng.normal(0.0, 1.0, size=(n, means.shape[1]))
        return {"y": y, "recorded": recorded, "consensus": a, "X": X.astype(np.float32)}

    return _store(config).artefact(content_key(p), make)


def glyph_votes(config: dict, M: int) -> np.ndarray:
    """Votes (pool + test, classes) of an ensemble of M simulated teachers (int32)."""
    p = {**glyph_payload(config), "kind": "song2018-ch5-glyph-votes", "M": int(M)}

    def make():
        q = glyph_queries(config)
        g = ch5_config(config)["glyph"]
        rng = generator(config["seed"], f"song2018/ch5/glyph-votes/{stream_key(p)}")
        y, n, m = q["y"], len(q["y"]), int(g["classes"])
        decay = float(g["consensus_decay_per_decade"]) * np.log10(M / float(g["reference_teachers"]))
        a = np.clip(q["consensus"] * (1.0 - decay), 0.0, 1.0)
        c = rng.dirichlet(np.full(m - 1, float(g["confusion_concentration"])), size=n)
        pv = np.zeros((n, m))
        others = (np.arange(m - 1)[None, :] + (np.arange(m - 1)[None, :] >= y[:, None])).astype(np.int64)
        np.put_along_axis(pv, others, (1.0 - a)[:, None] * c, axis=1)
        pv[np.arange(n), y] = a
        pv /= pv.sum(axis=1, keepdims=True)
        return {"votes": rng.multinomial(int(M), pv).astype(np.int32)}

    return _store(config).artefact(content_key(p), make)["votes"]


def nearest_mean_fit(X: np.ndarray, labels: np.ndarray, classes: int):
    """Class means of the labelled rows (classes without a row get +inf distance)."""
    sums = np.zeros((classes, X.shape[1]))
    np.add.at(sums, labels, X.astype(np.float64))
    cnt = np.bincount(labels, minlength=classes).astype(np.float64)
    return sums / np.maximum(cnt, 1)[:, None], cnt > 0


def nearest_mean_scores(model, X: np.ndarray) -> np.ndarray:
    """Negative squared distances to the class means (−inf for unseen classes)."""
    means, seen = model
    X = X.astype(np.float64)
    d = (X ** 2).sum(1)[:, None] - 2 * X @ means.T + (means ** 2).sum(1)[None, :]
    return np.where(seen[None, :], -d, -np.inf)


def nearest_mean_proba(model, X: np.ndarray, temperature: float) -> np.ndarray:
    """Softmax of the scores / (2·temperature) (the student's p(x) of Algorithm 4)."""
    s = nearest_mean_scores(model, X) / (2.0 * temperature)
    s -= s.max(axis=1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------------------------------------------------
# MNIST teachers
# ---------------------------------------------------------------------------------------------------------


def mnist_payload(config: dict) -> dict:
    c = ch5_config(config)["mnist"]
    dc = config["data"]
    return {"kind": "song2018-ch5-mnist-votes", "v": VOTES_VERSION, "seed": config["seed"], **c,
            "source": dc.get("mnist_source", "auto"), "mirror": dc["mirror"],
            "substitute_seed": dc["substitute_seed"]}


def _mnist(config: dict):
    c, dc = ch5_config(config)["mnist"], config["data"]
    return load_dataset("mnist", seed=dc["substitute_seed"], n_train=c["n_train"], n_test=c["n_test"],
                        cache_dir=dc["cache_dir"], mirror=dc["mirror"], source=dc.get("mnist_source", "auto"))


def ridge_features(X: np.ndarray, dim: int, seed: int) -> np.ndarray:
    """Data-independent Gaussian random projection of the pixels plus a bias column (float64)."""
    P = T.gaussian_projection_matrix(X.shape[1], dim, seed)
    Z = np.asarray(X, dtype=np.float64) @ P
    return np.hstack([Z, np.ones((len(Z), 1))])


def ridge_fit(Z: np.ndarray, y: np.ndarray, classes: int, l2: float, groups: np.ndarray | None = None,
              n_groups: int = 1) -> np.ndarray:
    """One-vs-rest ridge regression on ±1 targets; with ``groups`` one model per group (the teachers, fitted
    at once as a batched solve). Returns weights (n_groups, dim + 1, classes)."""
    g = np.zeros(len(Z), dtype=np.int64) if groups is None else groups
    Y = np.where(np.arange(classes)[None, :] == y[:, None], 1.0, -1.0)
    d = Z.shape[1]
    G = np.zeros((n_groups, d, d))
    B = np.zeros((n_groups, d, classes))
    for k in range(n_groups):                      # Gram matrices per teacher (d × d each)
        Zk = Z[g == k]
        G[k] = Zk.T @ Zk
        B[k] = Zk.T @ Y[g == k]
    G += l2 * np.eye(d)[None]
    return np.linalg.solve(G, B)


def mnist_votes(config: dict) -> dict:
    """Teachers' votes on the student pool (first half of the test set) and everything the student needs:
    ``votes`` (pool, 10), features and labels of the pool and of the held-out half, the data variant."""
    p = mnist_payload(config)

    def make():
        c = ch5_config(config)["mnist"]
        ds = _mnist(config)
        M = int(c["teachers"])
        rng = generator(config["seed"], f"song2018/ch5/mnist/{stream_key(p)}")
        n = ds.X_train.shape[0]
        part = rng.permutation(n) % M                   # disjoint partitions of (almost) equal size
        seed = int(c["projection_seed"])
        Ztr = ridge_features(ds.X_train, int(c["projection_dim"]), seed)
        Zte = ridge_features(ds.X_test, int(c["projection_dim"]), seed)
        W = ridge_fit(Ztr, np.asarray(ds.y_train), 10, float(c["l2"]), part, M)
        half = len(Zte) // 2
        pred = np.argmax(np.einsum("qd,tdc->tqc", Zte[:half], W), axis=2)           # (M, pool)
        votes = np.zeros((half, 10), dtype=np.int32)
        np.add.at(votes, (np.tile(np.arange(half), M), pred.ravel()), 1)
        return {"votes": votes, "Z": Zte.astype(np.float32), "y": np.asarray(ds.y_test, dtype=np.int64),
                "half": np.array(half), "variant": np.array(ds.variant), "is_substitute": np.array(ds.is_substitute),
                "baseline_W": ridge_fit(Ztr, np.asarray(ds.y_train), 10, float(c["l2"]))[0]}

    return _store(config).artefact(content_key(p), make)
