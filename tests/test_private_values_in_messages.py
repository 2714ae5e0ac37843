"""No exception message prints a private value (a distinctive number planted in a private
row must not appear), for every estimator that refuses out-of-domain private data."""

import numpy as np
import pytest

from skhybrid import DPLogisticRegression
from skhybrid.hybrid import LocalThresholdClassifier, ParityThresholdClassifier
from skhybrid.learners import PrivateParityClassifier
from skhybrid.ppm import PPMHalfspaceClassifier
from skhybrid.transfer import NoisySGDClassifier, ParityTransfer, SubsampleTestReweigh

CANARY = 31337  # a value no message has a reason to contain


def _bits(n=200, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 2, (n, d)), rng.integers(0, 256, n)])
    return X, rng.integers(0, 2, n)


CASES = [
    ("threshold value", lambda: LocalThresholdClassifier(classes=[0, 1]).fit(
        *_with_canary_threshold(), curator_mask=np.zeros(200, bool))),
    ("threshold value, hybrid", lambda: ParityThresholdClassifier(classes=[0, 1]).fit(
        *_with_canary_threshold(), curator_mask=np.arange(200) < 100)),
    ("parity feature", lambda: PrivateParityClassifier(classes=[0, 1]).fit(
        *_with_canary_bit())),
    ("parity transfer feature", lambda: ParityTransfer(classes=[0, 1]).fit(
        *_with_canary_bit(), curator_mask=np.arange(200) < 100)),
    ("label, logistic", lambda: DPLogisticRegression(classes=[0, 1]).fit(*_with_canary_label())),
    ("label, PPM", lambda: PPMHalfspaceClassifier(classes=[0, 1]).fit(
        *_with_canary_label(), public_mask=np.arange(200) < 50)),
    ("label, SGD", lambda: NoisySGDClassifier(classes=[0, 1]).fit(*_with_canary_label())),
    ("label, STR", lambda: SubsampleTestReweigh(classes=[0, 1]).fit(
        *_with_canary_label(), curator_mask=np.arange(200) < 100)),
]


def _with_canary_threshold():
    X, y = _bits()
    X[150, -1] = CANARY
    return X, y


def _with_canary_bit():
    X, y = _bits()
    X = X[:, :-1]
    X[150, 2] = CANARY
    return X, y


def _with_canary_label():
    X, y = _bits()
    y = y.copy()
    y[150] = CANARY
    return X.astype(float), y


@pytest.mark.parametrize("name, fit", CASES, ids=[c[0] for c in CASES])
def test_refusal_names_no_private_value(name, fit):
    with pytest.raises(ValueError) as info:
        fit()
    message = str(info.value)
    assert str(CANARY) not in message and "150" not in message, message
