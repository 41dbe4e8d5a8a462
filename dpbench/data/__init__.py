"""Data layer: dataset registry, verified downloads with mirrors, IDX files, substitutes, transforms.

Typical use::

    from dpbench.data import load_dataset, prepare_features
    ds = load_dataset("mnist", cache_dir="data", mirror=None, source="auto")
    X_train, X_test = prepare_features(ds, bias=True)   # every row has ||x|| <= 1
    ds.variant   # "mnist" or "substitute:deformed-digits-28x28" -- record it with the results

wu2016 ch. 3: ``load_dataset("covertype" | "protein")`` (binary, labels ±1; substitutes
``substitute:synthetic-covertype`` / ``substitute:synthetic-protein``), then ``unit_sphere_rows``; MNIST goes
through ``gaussian_random_projection(..., dim=50, seed)`` first.
"""

from dpbench.data.covertype import COVTYPE_SHA256, CovertypeFormatError, load_covertype
from dpbench.data.download import DownloadError, fetch_file, file_digest, verify_checksum
from dpbench.data.idx import IDXFormatError, read_idx, write_idx
from dpbench.data.mnist import MNIST_FILES, MNIST_URLS, load_mnist
from dpbench.data.protein import ProteinFormatError, load_protein
from dpbench.data.raw import RawSplit
from dpbench.data.registry import (
    DATASETS,
    Dataset,
    DatasetEntry,
    available_datasets,
    clear_cache,
    load_dataset,
    prepare_features,
)
from dpbench.data.substitute import DeformedDigits, load_substitute
from dpbench.data.tabular_substitute import SyntheticBinary, load_tabular_substitute
from dpbench.data.transforms import (
    add_bias_feature,
    first_classes,
    gaussian_projection_matrix,
    gaussian_random_projection,
    max_row_norm,
    pca_apply,
    pca_basis,
    pca_project,
    row_norms,
    unit_ball_normalise,
    unit_ball_rows_into,
    unit_sphere_rows,
)

__all__ = [
    "COVTYPE_SHA256",
    "CovertypeFormatError",
    "ProteinFormatError",
    "SyntheticBinary",
    "load_covertype",
    "load_protein",
    "load_tabular_substitute",
    "DATASETS",
    "Dataset",
    "DatasetEntry",
    "DeformedDigits",
    "DownloadError",
    "IDXFormatError",
    "MNIST_FILES",
    "MNIST_URLS",
    "RawSplit",
    "add_bias_feature",
    "available_datasets",
    "clear_cache",
    "fetch_file",
    "file_digest",
    "first_classes",
    "gaussian_projection_matrix",
    "gaussian_random_projection",
    "max_row_norm",
    "unit_ball_rows_into",
    "load_dataset",
    "load_mnist",
    "load_substitute",
    "pca_project",
    "pca_basis",
    "pca_apply",
    "prepare_features",
    "read_idx",
    "row_norms",
    "unit_ball_normalise",
    "unit_sphere_rows",
    "verify_checksum",
    "write_idx",
]
