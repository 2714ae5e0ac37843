"""verbose: iterative estimators report progress (rounds or steps, DP estimates, time)."""

import numpy as np
import pytest

from skhybrid import DegenerateModelWarning
from skhybrid.transfer import NoisySGDClassifier, ParityTransfer


def test_noisy_sgd_reports_plan_and_about_ten_progress_lines(capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    NoisySGDClassifier(epsilon=1.0, delta=1e-5, n_steps=1000, verbose=1,
                       random_state=0).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert "noise multiplier" in out[0] and "privacy spent" in out[0]
    steps = [line for line in out if line.startswith("[noisy SGD] step")]
    assert len(steps) == 9 and "s left" in steps[-1]
    NoisySGDClassifier(epsilon=1.0, delta=1e-5, n_steps=1000, random_state=0).fit(X, y)
    assert capsys.readouterr().out == ""


def test_parity_transfer_reports_candidates_and_the_local_test(capsys):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (6000, 8))
    y = X[:, [1, 4]].sum(axis=1) % 2
    curator = np.arange(6000) < 3000
    clf = ParityTransfer(epsilon=2.0, verbose=1, random_state=0).fit(X, y, curator_mask=curator)
    out = capsys.readouterr().out
    assert "distinct candidate parities" in out and "local test" in out
    assert clf.validated_


@pytest.mark.parametrize("n, message", [(2000, "found no parity"),
                                        (400, "no candidate passed the local test")])
def test_parity_transfer_warns_when_it_has_nothing_useful(n, message):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (n, 12))
    y = rng.integers(0, 2, n)  # random labels: no parity explains them
    with pytest.warns(DegenerateModelWarning, match=message):
        ParityTransfer(epsilon=1.0, random_state=0).fit(
            X, y, curator_mask=np.arange(n) < 3 * n // 4)
