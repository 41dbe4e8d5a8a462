"""The content-keyed store: a killed writer's temporaries are swept by the next writer of the same artefact."""

import numpy as np

from dpbench.store import Store


def test_stale_artefact_temporaries_are_swept(tmp_path):
    store = Store(tmp_path)
    path = store.artefact_path("ab" * 32)
    path.parent.mkdir(parents=True)
    stale = path.parent / f".{path.name}.x1y2.tmp"
    stale.write_bytes(b"partial")  # what a SIGKILL during np.savez + write leaves behind
    out = store.artefact("ab" * 32, lambda: {"a": np.arange(3)})
    np.testing.assert_array_equal(out["a"], np.arange(3))
    assert path.exists() and not stale.exists()
