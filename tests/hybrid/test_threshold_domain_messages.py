"""The threshold feature's domain refusal says what happens: at fit nothing is charged, at
predict no row is predicted."""

import numpy as np
import pytest

from skhybrid.hybrid import LocalThresholdClassifier, ParityThresholdClassifier


def test_out_of_domain_threshold_at_predict_says_no_row_is_predicted():
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 2, (200, 3)), rng.integers(0, 8, 200)]
    y, mask = X[:, 0], np.arange(200) < 100
    X_bad = X.copy()
    X_bad[0, -1] = 99
    for est in (LocalThresholdClassifier(threshold_bits=3, classes=[0, 1]),
                ParityThresholdClassifier(threshold_bits=3, classes=[0, 1])):
        with pytest.raises(ValueError, match="before anything is charged"):
            est.fit(X_bad, y, curator_mask=mask)
        est.fit(X, y, curator_mask=mask)
        with pytest.raises(ValueError, match="no row is predicted") as info:
            est.predict(X_bad)
        assert "charged" not in str(info.value) and "99" not in str(info.value)
