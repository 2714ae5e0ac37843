"""SubsampleTestReweigh: Algorithm 1 accuracy, Algorithm 2 accounting, spy, errors, routing."""

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.svm import LinearSVC

from skhybrid.accounting import PrivacyAccountant
from skhybrid.learners import DPLogisticRegression
from skhybrid.mechanisms import GaussianRandomizedResponse
from skhybrid.mechanisms._noise import record_noise
from skhybrid.datasets import make_shifted_gaussians
from skhybrid.transfer._privacy import str_curator_guarantee
from skhybrid.transfer._sample_complexity import str_min_curator_size
from skhybrid.transfer._str import SubsampleTestReweigh


def shifted_gaussians(n_c, n_l, *, d=20, k=3, sigma_t=0.02, minority=0.05, n_test=0, seed=0):
    """The regularised App. C setting (docs/notes/transfer_hybrid.rst): S = N(0, I_d); T
    shrinks k coordinates to std σ_T."""
    return make_shifted_gaussians(n_c, n_l, n_features=d, n_shifted=k, target_scale=sigma_t,
                                  minority=minority, n_test=n_test, random_state=seed)


def _svc(C=0.001):
    return LinearSVC(loss="hinge", C=C, intercept_scaling=10, max_iter=5000)


# --------------------------------------------------------------------------- Algorithm 1


def test_nonprivate_str_beats_source_only_on_regularised_learner():
    src_err, str_err = [], []
    for seed in range(3):
        X, y, mask, Xt, yt = shifted_gaussians(3000, 2000, n_test=20_000, seed=seed)
        src = _svc().fit(X[mask], y[mask])
        clf = SubsampleTestReweigh(_svc(), epsilon=np.inf, alpha=0.05, max_iter=400,
                                   random_state=seed).fit(X, y, curator_mask=mask)
        src_err.append(np.mean(src.predict(Xt) != yt))
        str_err.append(np.mean(clf.predict(Xt) != yt))
        thr = clf.privacy_params_["threshold"]
        assert clf.converged_ and clf.target_error_estimates_[-1] <= thr
        # Algorithm 1 stops at the threshold 2α + τ: err_T ≤ 2α + 2τ (Thm 3.1).
        assert str_err[-1] <= thr + clf.privacy_params_["tau"]
        assert clf.n_iter_ == clf.n_hypotheses_ == len(clf.target_error_estimates_)
    assert np.mean(str_err) <= np.mean(src_err) - 0.05


def test_nonprivate_sample_weight_mode_and_agnostic():
    X, y, mask, Xt, yt = shifted_gaussians(2000, 1500, n_test=10_000, seed=3)
    clf = SubsampleTestReweigh(_svc(), epsilon=np.inf, alpha=0.05, max_iter=400,
                               reweighting="sample_weight", random_state=0)
    clf.fit(X, y, curator_mask=mask)
    assert clf.converged_
    assert np.mean(clf.predict(Xt) != yt) < np.mean(_svc().fit(X[mask], y[mask]).predict(Xt) != yt)
    # agnostic: the returned hypothesis has the smallest estimate among those tested.
    ag = SubsampleTestReweigh(_svc(), epsilon=np.inf, alpha=0.01, max_iter=15, agnostic=True,
                              random_state=0).fit(X, y, curator_mask=mask)
    local = ~mask
    assert np.mean(ag.predict(X[local]) != y[local]) == pytest.approx(
        ag.target_error_estimates_.min())


def test_nonprivate_spends_unbounded_and_refuses_finite_budget():
    X, y, mask, _, _ = shifted_gaussians(300, 200, seed=0)
    clf = SubsampleTestReweigh(LogisticRegression(), epsilon=np.inf, max_iter=3, random_state=0)
    clf.fit(X, y, curator_mask=mask)
    assert clf.privacy_spent_["central"][0] == np.inf
    assert clf.privacy_spent_["local"][0] == np.inf
    from skhybrid.accounting import BudgetExceededError
    with pytest.raises(BudgetExceededError):
        clf.set_params(accountant=PrivacyAccountant(epsilon=5.0)).fit(X, y, curator_mask=mask)


# --------------------------------------------------------------------------- Algorithm 2

EPS, DELTA, KAPPA, T, M1 = 1.0, 1e-5, 0.2, 4, 20


def _private_data(seed=0, n_c=None, n_l=400):
    n_c = n_c or str_min_curator_size(EPS, DELTA, T, KAPPA, M1) + 10
    return shifted_gaussians(n_c, n_l, d=5, seed=seed)


def _private(**kw):
    params = dict(base_estimator=DPLogisticRegression(data_norm=4.0), epsilon=EPS, delta=DELTA,
                  alpha=0.05, max_iter=T, kappa=KAPPA, subsample_size=M1, local_batch_size=50,
                  random_state=0)
    params.update(kw)
    return SubsampleTestReweigh(**params)


def test_private_fit_charges_exactly_the_computed_guarantee():
    X, y, mask, _, _ = _private_data()
    acc = PrivacyAccountant(epsilon=EPS, delta=DELTA)
    clf = _private(accountant=acc).fit(X, y, curator_mask=mask)
    g = str_curator_guarantee(EPS, DELTA, int(mask.sum()), KAPPA, M1, T)
    central = [e for e in acc.events if e.population == "central"]
    local = [e for e in acc.events if e.population == "local"]
    assert len(central) == 1 and len(local) == 1
    assert (central[0].epsilon, central[0].delta) == (g.total_epsilon, g.total_delta)
    assert central[0].kind == "approx" and central[0].params["max_iter"] == T
    assert central[0].params["round_epsilon"] == g.round_epsilon
    assert g.total_epsilon <= EPS
    sigma = math.sqrt(2 * math.log(2 / DELTA)) / EPS
    assert (local[0].epsilon, local[0].delta, local[0].count) == (EPS, DELTA, 1)
    rr = GaussianRandomizedResponse(EPS, DELTA)
    assert local[0].rho == rr.rho and sigma <= rr.sigma <= sigma * 1.001
    assert clf.privacy_spent_["central"] == (g.total_epsilon, g.total_delta)
    assert clf.privacy_spent_["local"][0] <= EPS and clf.privacy_spent_["local"][1] <= DELTA
    # The learner clones ran with the per-round (ε_M, δ_M) and never charged themselves
    # (STR's events are the only ones); the released one holds STR's accountant again,
    # so that refitting it is charged.
    assert clf.hypothesis_.epsilon == 1.0 and clf.hypothesis_.delta == g.learner_delta
    assert clf.hypothesis_.accountant is clf.accountant
    assert [e.source for e in clf.accountant.events] == ["SubsampleTestReweigh"] * len(
        clf.accountant.events)


def test_paper_accounting_needs_more_rows_and_charges_drv():
    n_paper = str_min_curator_size(EPS, DELTA, T, KAPPA, M1, accounting="paper")
    assert n_paper > 5 * str_min_curator_size(EPS, DELTA, T, KAPPA, M1)
    X, y, mask, _, _ = _private_data()
    with pytest.raises(ValueError, match=f"minimum is n = {n_paper} "):
        _private(accounting="paper").fit(X, y, curator_mask=mask)
    with pytest.raises(ValueError, match="base_epsilon"):
        _private(accounting="paper", base_epsilon=2.0).fit(X, y, curator_mask=mask)


def test_noise_spy_sees_every_round():
    X, y, mask, _, _ = _private_data(seed=1)
    clf = _private(alpha=0.001)  # threshold 3α: rarely met (the RR estimate is noisy)
    with record_noise() as draws:
        clf.fit(X, y, curator_mask=mask)
    T = clf.n_iter_
    assert T >= 1 and len(clf.target_error_estimates_) == T
    subsample = [d for d in draws if d.tag == "str-subsample"]
    rr = [d for d in draws if d.tag == "gaussian_randomized_response"]
    learner = [d for d in draws if d.tag == "objective_perturbation"]
    assert [d.count for d in subsample] == [M1] * T
    # Exact draws: uniform integers below the integer weights' total, never float uniforms.
    assert {d.kind for d in subsample} == {"integers"}
    assert [d.count for d in rr] == [50] * T
    sigma = GaussianRandomizedResponse(EPS, DELTA).sigma  # the reports' lattice noise
    assert clf.privacy_events_[1].rho == GaussianRandomizedResponse(EPS, DELTA).rho
    assert all(d.scale == pytest.approx(sigma) for d in rr)
    assert len(learner) == T  # one objective-perturbation fit per round
    eps_prime = {d.scale for d in learner}
    assert len(eps_prime) == 1  # every round's learner at the same (ε_M, δ_M)
    # Nothing else draws noise.
    (order,) = [d for d in draws if d.tag == "agent-rounds"]  # agents assigned to rounds once
    assert order.kind == "permutation" and order.scale == 400
    # the learner's output noise (approximate minima perturbation): one release per round
    assert len([d for d in draws if d.tag == "laplace"]) == T
    assert {d.tag for d in draws} == {"agent-rounds", "str-subsample", "gaussian_randomized_response",
                                      "objective_perturbation",
                                      "objective_perturbation-direction", "laplace"}


def test_mw_weights_never_exposed():
    X, y, mask, _, _ = _private_data(seed=2)
    clf = _private(alpha=0.001).fit(X, y, curator_mask=mask)
    n_c = int(mask.sum())
    for name, value in vars(clf).items():
        if name.endswith("_"):
            assert "weight" not in name
            assert not (isinstance(value, np.ndarray) and value.size >= n_c), name
    assert clf.target_error_estimates_.shape == (clf.n_iter_,)


def test_auto_subsample_size_is_largest_certified():
    X, y, mask, _, _ = _private_data()
    X = X[:, :1]  # one feature: 20 certified draws clear the 10*(d+1) floor
    clf = _private(subsample_size=None).fit(X, y, curator_mask=mask)
    m = clf.privacy_params_["subsample_size"]
    n_c = int(mask.sum())
    assert str_curator_guarantee(EPS, DELTA, n_c, KAPPA, m, T).feasible
    assert not str_curator_guarantee(EPS, DELTA, n_c, KAPPA, m + 1, T).feasible


@pytest.mark.parametrize("eps, n_c, kappa, T, base_eps, accounting", [
    (1.0, 100_000, 0.2, 12, 1.0, "tight"), (0.3, 100_000, 0.05, 40, 2.0, "tight"),
    (2.0, 5_000, 1.0, 3, 0.5, "tight"), (1.0, 2_000_000, 0.5, 100, 1.0, "tight"),
    (1.0, 100_000, 0.2, 12, 1.0, "paper"),
])
def test_subsample_search_is_the_bisection(eps, n_c, kappa, T, base_eps, accounting):
    # The regula-falsi search keeps a [feasible, infeasible] bracket: it must end where
    # bisection does, at the largest feasible subsample size.
    from skhybrid.transfer._str import _largest_certified_size

    def guarantee(m):
        return str_curator_guarantee(eps, 1e-5, n_c, kappa, m, T, learner_epsilon=base_eps,
                                     accounting=accounting)

    lo, hi = 1, n_c
    assert guarantee(lo).feasible and not guarantee(hi).feasible
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if guarantee(mid).feasible else (lo, mid)
    assert _largest_certified_size(guarantee, eps, n_c) == lo


# --------------------------------------------------------------------------- errors


def test_errors_name_the_problem():
    X, y, mask, _, _ = _private_data()
    n_c, n_l = int(mask.sum()), int((~mask).sum())
    with pytest.raises(ValueError, match="no local rows"):
        _private().fit(X, y, curator_mask=np.ones_like(mask))
    with pytest.raises(ValueError, match="no curator rows"):
        _private().fit(X, y, curator_mask=np.zeros_like(mask))
    y3 = y.copy()
    y3[:5] = 7
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        _private().fit(X, y3, curator_mask=mask)
    with pytest.raises(ValueError, match=f"largest feasible max_iter is {n_l // 50}"):
        _private(max_iter=n_l // 50 + 1).fit(X, y, curator_mask=mask)
    n_min = str_min_curator_size(EPS, DELTA, T, KAPPA, M1)
    few = np.r_[np.arange(n_c) < n_min - 1, np.zeros(n_l, bool)] | ~mask
    with pytest.raises(ValueError, match=f"minimum is n = {n_min} curator rows"):
        _private().fit(X[few], y[few], curator_mask=mask[few])
    with pytest.raises(ValueError, match="not a DP learner"):
        _private(base_estimator=LogisticRegression()).fit(X, y, curator_mask=mask)
    with pytest.raises(ValueError, match="sample_weight"):
        _private(reweighting="sample_weight").fit(X, y, curator_mask=mask)


def test_mask_none_runs_the_dp_learner_once():
    X, y, _, _, _ = shifted_gaussians(200, 0, d=4, seed=0)
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    clf = SubsampleTestReweigh(DPLogisticRegression(data_norm=3.0), epsilon=1.0, delta=1e-5,
                               accountant=acc, random_state=0).fit(X, y)
    direct = DPLogisticRegression(data_norm=3.0, epsilon=1.0, delta=1e-5, classes=clf.classes_,
                                  random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.hypothesis_.coef_, direct.coef_)
    np.testing.assert_array_equal(clf.predict(X), direct.predict(X))
    assert clf.n_hypotheses_ == 0 and clf.target_error_estimates_.size == 0
    assert acc.spent("central") == (1.0, 1e-5) and acc.spent("local") == (0.0, 0.0)
    np.testing.assert_allclose(clf.predict_proba(X), direct.predict_proba(X))


# --------------------------------------------------------------------------- routing

FIT_LOG = []


class RecordingSTR(SubsampleTestReweigh):
    def fit(self, X, y, *, curator_mask=None):
        FIT_LOG.append((np.asarray(X)[:, 0].astype(int), np.asarray(curator_mask)))
        return super().fit(X, y, curator_mask=curator_mask)


def test_curator_mask_is_split_per_fold():
    rng = np.random.default_rng(0)
    n = 120
    X = np.column_stack([np.arange(n), rng.normal(size=(n, 2))])
    y = (X[:, 1] > 0).astype(int)
    mask = rng.random(n) < 0.6
    est = RecordingSTR(LogisticRegression(), epsilon=np.inf, max_iter=2, random_state=0)
    FIT_LOG.clear()
    cross_validate(est, X, y, cv=KFold(3, shuffle=True, random_state=0),
                   params={"curator_mask": mask})
    GridSearchCV(est, {"alpha": [0.05, 0.1]}, cv=3).fit(X, y, curator_mask=mask)
    assert len(FIT_LOG) == 3 + 2 * 3 + 1
    for rows, received in FIT_LOG:
        np.testing.assert_array_equal(received, mask[rows])


# --------------------------------------------------------------------------- defaults


def test_too_small_certified_subsample_is_refused_before_charging():
    X, y, mask, _, _ = _private_data()  # 5 features: 20 certified draws < 10 * 6
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    n_min = str_min_curator_size(EPS, DELTA, T, KAPPA, 60)
    with pytest.raises(ValueError, match=f"subsample_size=20 .*n = {n_min} curator rows"):
        _private(subsample_size=None, accountant=acc).fit(X, y, curator_mask=mask)
    assert acc.events == []
    # n_min curator rows are enough (the message's number is right).
    X2, y2, mask2, _, _ = _private_data(n_c=n_min)
    clf = _private(subsample_size=None).fit(X2, y2, curator_mask=mask2)
    assert clf.privacy_params_["subsample_size"] >= 60


def test_default_rounds_follow_the_local_rows_or_refuse():
    from skhybrid.mechanisms import GaussianRandomizedResponse
    from skhybrid.transfer import str_min_local_batch_size

    sigma = GaussianRandomizedResponse(5.0, DELTA).sigma
    n0 = str_min_local_batch_size(0.2, sigma)
    X, y, mask, _, _ = shifted_gaussians(6000, 3 * n0 + 7, d=2, seed=1)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    clf = SubsampleTestReweigh(epsilon=5.0, delta=DELTA, alpha=0.2, accountant=acc,
                               random_state=0)
    clf.fit(X, y, curator_mask=mask)
    plan = clf.privacy_params_
    assert plan["local_batch_size"] == n0 and plan["max_iter"] == 3  # n_local // N0
    assert plan["test_std"] <= 0.2 / 2
    # Too few local rows for one meaningful test: refused, nothing charged.
    acc2 = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    Xs, ys, ms = X[: 6000 + n0 - 1], y[: 6000 + n0 - 1], mask[: 6000 + n0 - 1]
    with pytest.raises(ValueError, match=f"needs {n0} local agents"):
        clf.set_params(accountant=acc2).fit(Xs, ys, curator_mask=ms)
    assert acc2.events == []


def test_small_local_batch_warns_and_useless_result_warns():
    X, y, mask, _, _ = _private_data()
    with pytest.warns(UserWarning, match="converged_ means little"):
        _private(subsample_size=None, local_batch_size=50).fit(X[:, :1], y, curator_mask=mask)
    # Target labels independent of X: every hypothesis errs about half the time.
    rng = np.random.default_rng(0)
    y_noise = y.copy()
    y_noise[~mask] = rng.choice(np.unique(y), (~mask).sum())  # nothing to learn
    with pytest.warns(UserWarning, match="no better than predicting a constant"):
        SubsampleTestReweigh(_svc(), epsilon=np.inf, alpha=0.01, max_iter=3,
                             random_state=0).fit(X, y_noise, curator_mask=mask)


def test_verbose_reports_rounds_estimates_and_time(capsys):
    X, y, mask, _, _ = shifted_gaussians(300, 200, seed=0)
    SubsampleTestReweigh(LogisticRegression(), epsilon=np.inf, alpha=0.01, max_iter=30,
                         verbose=1, random_state=0).fit(X, y, curator_mask=mask)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "round" in ln]
    assert 3 <= len(lines) <= 12  # about ten lines for 30 rounds
    assert "target error estimate" in lines[0] and " s" in lines[0]


def test_refusal_advice_depends_on_whether_max_iter_was_derived():
    # With max_iter=None the rounds are as many local batches as fit: a larger epsilon fits
    # more of them and needs more curator rows, so "raise epsilon" would mislead.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(45_000, 5))
    y, mask = (X[:, 0] > 0).astype(int), np.arange(45_000) < 5_000
    messages = {}
    for max_iter in (None, 20):
        with pytest.raises(ValueError, match="curator rows") as info:
            SubsampleTestReweigh(epsilon=2.0, delta=1e-5, classes=[0, 1],
                                 max_iter=max_iter).fit(X, y, curator_mask=mask)
        messages[max_iter] = str(info.value)
    assert "derived" in messages[None] and "raise epsilon" not in messages[None]
    assert "raise epsilon" in messages[20] and "derived" not in messages[20]


@pytest.mark.parametrize("max_iter", [None, 1])
def test_refusal_at_one_round_does_not_advise_lowering_max_iter(max_iter):
    # One batch of local agents (derived) or max_iter=1 given: there is no round to drop.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(15_000, 20))
    y, mask = (X[:, 0] > 0).astype(int), np.arange(15_000) < 3_000
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(ValueError, match="max_iter=1 round") as info:
        SubsampleTestReweigh(epsilon=1.0, delta=1e-6, alpha=0.1, classes=[0, 1],
                             max_iter=max_iter, accountant=acc).fit(X, y, curator_mask=mask)
    message = str(info.value)
    assert "lower max_iter" not in message and "smaller max_iter" not in message, message
    assert ("raise epsilon" in message) == (max_iter is not None)
    assert acc.events == []
