"""The membership study trains through the learners of the studies it attacks (vdm2020 methods, wu2016 ch. 3
many-model PSGD, wu2016 ch. 4 mechanisms): every method's trained model equals, with the same generator, the
model of the study's former stand-alone training chain (frozen below; bit-identical on the machine that froze
them, the tolerance only allows for another BLAS/L-BFGS path), with the fault injection noise_factor = 2."""

import copy

import numpy as np
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config
from dpbench.studies.membership import training as mc

FROZEN = {
    "non_private/2": [27.816533917164204, -0.17578558202514397],
    "output_perturbation/2": [-25.823691084895227, 27.39917978780379],
    "loss_perturbation/2": [2.4641066546499215, 0.4262301925936266],
    "dpsgd/2": [1.2016861222921844, 0.36265391182132534],
    "bolt_on/2": [-78.24852699421902, 108.53542311657091],
    "scs13/2": [16.893381132564663, 10.854896202935517],
    "bst14/2": [717.0940462643026, -559.8093660134003],
    "output_perturbation_erm/2": [-66.6761854712611, 77.67023541188277],
    "objective_perturbation/2": [3.801660508218052, -0.3978933061048259],
    "functional_mechanism/2": [-0.09279282261692529, -0.06352106868779114],
    "non_private/3": [-0.23184640061173276, 0.1336484403939523],
    "output_perturbation/3": [732.1460133742901, 693.7248724081833],
    "loss_perturbation/3": [-10.791406073885314, -10.202521670637157],
    "dpsgd/3": [0.8007396929854304, -0.9756291015050771],
    "bolt_on/3": [-489.4031282829448, -64.45789893843471],
    "scs13/3": [92.63464901764102, 36.269274386071615],
    "bst14/3": [163.55611482373212, -890.7931897631247],
}


def _setup():
    cfg = copy.deepcopy(load_config(DEFAULT_CONFIG_PATH)["studies"]["membership"])
    cfg["training"]["dpsgd"]["epochs"] = 2
    g = np.random.default_rng(0)
    X = g.standard_normal((60, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X = np.c_[X, np.ones(60)] / np.sqrt(2)
    y3 = g.integers(0, 3, 60)
    return cfg, X, {2: (X[:, 0] > 0).astype(np.int64), 3: y3}


@pytest.mark.parametrize("key", sorted(FROZEN))
def test_trained_models_match_the_former_training_chain(key):
    cfg, X, ys = _setup()
    method, C = key.split("/")
    W, _ = mc.train(cfg, method, X, ys[int(C)], int(C), 0.8, np.random.default_rng(4), 2.0)
    np.testing.assert_allclose([W[0, -1], W[-1, -1]], FROZEN[key], rtol=1e-7)


def test_every_method_has_a_trainer_and_unknown_or_non_binary_raise():
    cfg, X, ys = _setup()
    assert set(mc.METHOD_CLASS) == set(mc.METHODS)
    with pytest.raises(ValueError, match="unknown method"):
        mc.train(cfg, "nope", X, ys[2], 2, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="binary"):
        mc.train(cfg, "objective_perturbation", X, ys[3], 3, 1.0, np.random.default_rng(0))
