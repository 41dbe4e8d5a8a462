"""Labels of a stack of softmax models (subsample-and-aggregate's votes): the argmax in the GEMM's own layout
(``dpbench.learn.predict_many``) against the argmax over a transposed (R, n, C) view (the previous code, kept
here as the reference), alternated A B A B on one BLAS thread; the labels must be identical.

    python benchmarks/predict_many.py [--models 256] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def transposed_view(thetas, X):
    from dpbench.learn.softmax import _CHUNK_ELEMS, predict_logits_many

    R, _, C = thetas.shape
    step = max(1, _CHUNK_ELEMS // max(1, X.shape[0] * C))
    out = np.empty((R, X.shape[0]), dtype=np.intp)
    for s in range(0, R, step):
        out[s : s + step] = np.argmax(predict_logits_many(thetas[s : s + step], X), axis=2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    from dpbench.learn import predict_many

    rng = np.random.default_rng(0)
    X = rng.standard_normal((10_000, 785))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    thetas = rng.standard_normal((args.models, 785, 10))
    with threadpool_limits(1):
        assert np.array_equal(predict_many(thetas, X), transposed_view(thetas, X))
        a, b = [], []
        for _ in range(args.rounds):
            for f, acc in ((transposed_view, a), (predict_many, b)):
                t = time.process_time()
                f(thetas, X)
                acc.append(time.process_time() - t)
    r = [x / y for x, y in zip(a, b)]
    print(f"{args.models} models x 10,000 rows, {args.rounds} rounds, load {os.getloadavg()[0]:.1f}: transposed view "
          f"{statistics.median(a):.2f} CPU-s, GEMM layout {statistics.median(b):.2f}; ratio median "
          f"{statistics.median(r):.2f}x [{min(r):.2f}-{max(r):.2f}] (labels identical)")


if __name__ == "__main__":
    main()
