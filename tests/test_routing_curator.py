"""curator_mask routing for the hybrid estimators whose own tests do not cover it.

Their features are a categorical domain (bits, ±1), so each row's index is written into
ten extra binary columns; a fit decodes the rows it received and checks the mask it got
equals mask[rows] (the same check as tests/test_routing.py).
"""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skhybrid.hybrid import ParityAndThresholdClassifier, SelectThenEstimate

N, ID_BITS = 600, 10
LOG = []


def _ids(n):
    return (np.arange(n)[:, None] >> np.arange(ID_BITS)) & 1


def _decode(bits):
    return (np.asarray(bits)[:, :ID_BITS].astype(int) << np.arange(ID_BITS)).sum(1)


def _recording(cls):
    def fit(self, X, y=None, *, curator_mask=None):
        rows = _decode(np.asarray(X) > 0)
        LOG.append((rows, np.asarray(curator_mask)))
        return cls.fit(self, X, y, curator_mask=curator_mask)

    return type("Recording" + cls.__name__, (cls,), {"fit": fit})


def _select_data(rng):
    X = np.where(np.column_stack([_ids(N), rng.integers(0, 2, (N, 5))]) == 1, 1, -1)
    return _recording(SelectThenEstimate)(epsilon=np.inf), X, None


def _two_bit_data(rng):
    X = np.column_stack([_ids(N), rng.integers(0, 2, (N, 3)), rng.integers(0, 64, N)])
    Y = np.column_stack([rng.integers(0, 2, N), X[:, -1] >= 20])
    est = _recording(ParityAndThresholdClassifier)(threshold_bits=6, epsilon=np.inf)
    return est, X, Y


@pytest.mark.parametrize("make", [_select_data, _two_bit_data], ids=["select", "two-bit"])
def test_each_fold_gets_mask_of_its_rows(make):
    rng = np.random.default_rng(0)
    est, X, y = make(rng)
    mask = rng.random(N) < 0.4

    def score(estimator, X, y=None):
        return 0.0

    LOG.clear()
    cross_validate(est, X, y, cv=KFold(3, shuffle=True, random_state=0), scoring=score,
                   params={"curator_mask": mask})
    GridSearchCV(est, {"epsilon": [np.inf, 2.0]}, cv=2, scoring=score).fit(
        X, y, curator_mask=mask)
    assert len(LOG) == 3 + 2 * 2 + 1
    for rows, received in LOG:
        np.testing.assert_array_equal(received, mask[rows])
