"""The content-keyed store: a killed writer's temporaries are swept by the next writer of the same artefact."""

import numpy as np
import pytest

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


def _damage(path, how):
    data = path.read_bytes()
    if how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(np.random.default_rng(1).bytes(max(len(data), 16)))
    elif how == "empty_object":
        path.write_bytes(b"{}")
    elif how == "foreign_object":
        path.write_bytes(b'{"accuracy": 0.5}')
    elif how == "accuracy_text":
        path.write_bytes(b'{"accuracy": "high", "variant": "real", "runtime_s": 0.1}')
    elif how == "accuracy_nan":
        path.write_bytes(b'{"accuracy": NaN, "variant": "real", "runtime_s": 0.1}')
    elif how == "no_accuracy":
        path.write_bytes(b'{"variant": "real", "runtime_s": 0.1}')
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["truncate", "garbage", "empty_object", "foreign_object", "accuracy_text",
                                 "accuracy_nan", "no_accuracy"])
def test_unusable_cell_is_logged_and_recomputed(tmp_path, dpbench_log, how):
    store = Store(tmp_path)
    key = "cd" * 32
    good = {"accuracy": 0.9, "variant": "real", "runtime_s": 0.1}
    store.put_cell(key, good)
    _damage(store.cell_path(key), how)
    from dpbench.runner import CELL_FIELDS as required   # what the runner requires of every cell

    with dpbench_log.at_level("WARNING"):
        assert store.get_cell(key, required) is None
        assert not store.has_cell(key, required)
    assert str(store.cell_path(key)) in dpbench_log.text
    calls = []
    generic = how in ("foreign_object", "accuracy_text", "accuracy_nan", "no_accuracy")
    rec = store.record(key, lambda: calls.append(1) or good) if not generic else good
    if not generic:  # (these are valid generic records; the runner requires its fields and their types)
        assert rec == good and calls == [1] and store.get_cell(key) == good


@pytest.mark.parametrize("how", ["truncate", "garbage"])
def test_unreadable_artefact_is_logged_and_recomputed(tmp_path, dpbench_log, how):
    store = Store(tmp_path)
    key = "ef" * 32
    store.artefact(key, lambda: {"theta": np.arange(1000.0)})
    _damage(store.artefact_path(key), how)
    fresh = Store(tmp_path)  # no in-process memo
    calls = []
    with dpbench_log.at_level("WARNING"):
        out = fresh.artefact(key, lambda: calls.append(1) or {"theta": np.arange(1000.0)})
    assert calls == [1] and str(store.artefact_path(key)) in dpbench_log.text
    np.testing.assert_array_equal(out["theta"], np.arange(1000.0))
    np.testing.assert_array_equal(Store(tmp_path).artefact(key, lambda: 1 / 0)["theta"], np.arange(1000.0))


def test_cell_digest_catches_values_altered_in_place(tmp_path, caplog):
    """A cell is stored with a content digest: an accuracy edited in the file (valid JSON, finite number) or a
    record copied under another cell's name is read as missing, with a warning naming the file, and recomputed;
    a record written before digests existed (no digest field) is read as it is."""
    import json
    import logging

    from dpbench.store import DIGEST_FIELD, Store

    st = Store(tmp_path)
    st.put_cell("k1", {"accuracy": 0.81, "noise_scale": 2.0})
    assert st.get_cell("k1", ("accuracy",)) == {"accuracy": 0.81, "noise_scale": 2.0}
    path = st.cell_path("k1")
    rec = json.loads(path.read_text())
    assert DIGEST_FIELD in rec
    path.write_text(json.dumps({**rec, "accuracy": 0.99}))
    with caplog.at_level(logging.WARNING, logger="dpbench"):
        assert st.get_cell("k1", ("accuracy",)) is None
    assert any("fails its content digest" in r.getMessage() and str(path) in r.getMessage() for r in caplog.records)
    st.put_cell("k2", {"accuracy": 0.5})
    st.cell_path("k3").parent.mkdir(parents=True, exist_ok=True)
    st.cell_path("k3").write_bytes(st.cell_path("k2").read_bytes())     # the right record under the wrong name
    assert st.get_cell("k3") is None and st.get_cell("k2") == {"accuracy": 0.5}
    st.cell_path("k4").parent.mkdir(parents=True, exist_ok=True)
    st.cell_path("k4").write_text(json.dumps({"accuracy": 0.7}))      # legacy: no digest
    assert st.get_cell("k4", ("accuracy",)) == {"accuracy": 0.7}
    st.put_cell("k5", {"accuracy": float("nan"), "x": [1, 2]})        # NaN and lists round-trip under the digest
    assert st.get_cell("k5")["x"] == [1, 2]
