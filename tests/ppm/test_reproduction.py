"""The ``ppm-halfspaces`` reproduction: data set-up (fast) and the orderings it shows (slow)."""

import numpy as np
import pytest

from skhybrid.experiments import available
from skhybrid.experiments import ppm as exp


def _mean(rows, **where):
    errs = [r["error"] for r in rows if all(r[k] == v for k, v in where.items())]
    assert errs, where
    return float(np.mean(errs))


def test_registered():
    assert available()["ppm-halfspaces"] is exp.ppm_halfspaces


@pytest.mark.parametrize("setting", ["realizable", "agnostic"])
def test_problem_is_label_determined(setting):
    X, y, public, X_test, y_test = exp.make_problem("halfspace", 3, 4000, setting, seed=1)
    assert X.shape == (4000, 3) and X_test.shape == (5000, 3)
    assert np.abs(X).max() <= 1  # the known domain the DP baseline's data_norm comes from
    np.testing.assert_array_equal(public, y == exp.PUBLIC)
    # The test labels are the clean target; training labels differ only under noise.
    w_test = exp.make_target("halfspace", 3, np.random.default_rng(1))(X)
    flipped = np.mean(w_test.astype(int) != y)
    if setting == "realizable":
        assert flipped == 0
    else:
        assert abs(flipped - exp.NOISE) < 0.02


def test_breast_cancer_projection_is_fit_on_public_benign_rows_only():
    X, y, public, X_test, y_test, data_norm = exp.load_breast_cancer_ppm(0.5, 2, seed=0)
    assert X.shape[1] == X_test.shape[1] == 2
    assert len(y) + len(y_test) == 569 and abs(len(y_test) / 569 - 0.3) < 0.01
    assert np.all(y[public] == 1)  # benign rows only; malignant (0) are all private
    assert 0.35 < public.sum() / (y == 1).sum() < 0.65
    # Standardise + PCA fitted on the public rows: they are centred, with PCA's
    # decreasing variances, and data_norm is their largest norm (public information).
    np.testing.assert_allclose(X[public].mean(axis=0), 0, atol=1e-10)
    var = X[public].var(axis=0)
    assert var[0] >= var[1]
    assert data_norm == pytest.approx(np.linalg.norm(X[public], axis=1).max())


def test_small_run_has_every_method_and_charges_epsilon():
    rows = exp.run_synthetic(["halfspace"], [2], ["realizable"], 200, [0.5], [0])
    methods = {r["method"] for r in rows}
    assert methods == {"LogReg non-private", "DPLogReg all-private", "PPM net", "PPM hull",
                       "ERM net (eps=inf)", "ERM hull (eps=inf)"}
    assert all(0 <= r["error"] <= 1 for r in rows)
    X, y, public, *_ = exp.make_problem("halfspace", 2, 200, "realizable", 0)
    models = exp.fit_methods(X, y, public, 0.5, 0, np.sqrt(2))
    for m in models.values():
        assert m.privacy_spent_["central"] == (0.5, 0.0)
    # The ERM over the hull family is exact on realizable data: zero training error.
    erm = exp._free_methods(X, y, public)["ERM hull (eps=inf)"]
    assert erm.score(X, y) == 1.0


def test_plot_polytope_draws_the_chosen_halfspaces(tmp_path):
    pytest.importorskip("matplotlib")
    from skhybrid.experiments._plotting import new_figure

    X, y, public, *_ = exp.make_problem("ball", 2, 300, "realizable", 0)
    clf = exp._ppm(1.0, 0, candidates="hull").fit(X, y, public_mask=public)
    fig, ax = new_figure()
    exp.plot_polytope(ax, clf, X, y, public, "t", lim=1.05)
    assert len(ax.lines) == clf.halfspaces_[0].shape[0]


@pytest.mark.slow
def test_quick_reproduction_orderings(tmp_path):
    rows = exp.ppm_halfspaces(str(tmp_path), quick=True, seed=0)
    for name in ("ppm_error_vs_eps.png", "ppm_error_vs_n.png", "ppm_polytopes.png"):
        assert (tmp_path / name).stat().st_size > 0
    eps_rows = [r for r in rows if r["experiment"] == "error-vs-eps"]
    real2 = dict(target="halfspace", d=2, setting="realizable")
    agn2 = dict(target="halfspace", d=2, setting="agnostic")
    real3 = dict(target="halfspace", d=3, setting="realizable")
    # Realizable halfspace: PPM beats all-private DP logistic regression at small ε.
    for eps in (0.1, 0.5):
        dp = _mean(eps_rows, method="DPLogReg all-private", epsilon=eps, **real2)
        assert _mean(eps_rows, method="PPM net", epsilon=eps, **real2) < dp
        assert _mean(eps_rows, method="PPM hull", epsilon=eps, **real2) < dp
    dp3 = _mean(eps_rows, method="DPLogReg all-private", epsilon=0.1, **real3)
    assert _mean(eps_rows, method="PPM hull", epsilon=0.1, **real3) < dp3
    # Label noise: the net is robust, the hull collapses (at every ε).
    for eps in exp.EPSILONS:
        assert (_mean(eps_rows, method="PPM net", epsilon=eps, **agn2)
                < _mean(eps_rows, method="PPM hull", epsilon=eps, **agn2) - 0.1)
    # ε = ∞ over the same candidates is at least as good as the private selection
    # on average (up to sampling of the test set).
    assert (_mean(eps_rows, method="ERM hull (eps=inf)", **real2)
            <= _mean(eps_rows, method="PPM hull", epsilon=0.1, **real2) + 0.005)
    # Breast cancer, every benign row public: PPM beats all-private DP logistic
    # regression at ε ≤ 1.
    bc = [r for r in rows if r["experiment"] == "breast-cancer"
          and r["target"] == "public benign 100%"]
    for eps in (0.1, 0.5, 1.0):
        assert (_mean(bc, method="PPM hull", epsilon=eps)
                < _mean(bc, method="DPLogReg all-private", epsilon=eps))
