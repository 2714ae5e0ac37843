"""PPMHalfspaceClassifier: utility, exactness of the ε = inf mode, accounting, bad input."""

import math
import warnings
from itertools import combinations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skhybrid.accounting import BudgetExceededError, PrivacyAccountant
from skhybrid.learners import DPLogisticRegression
from skhybrid.mechanisms._noise import record_noise
from skhybrid.ppm._candidates import (
    direction_net_halfspaces,
    hull_facets,
    membership_tolerance,
    supporting_halfspaces_exact,
)
from skhybrid.ppm._classifier import _NET_QUANTILES, PPMHalfspaceClassifier


def _ball(n, seed, d=2, radius=0.7):
    """Private class (1) outside a ball, public class (0) inside: label-determined."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    return X, (np.linalg.norm(X, axis=1) > radius).astype(int)


def _halfspace(n, seed, d=2, noise=0.0):
    """Private class on one side of a fixed hyperplane (the paper's concept class)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    w = np.ones(d) / math.sqrt(d)
    y = (X @ w > 0.2).astype(int)
    flip = rng.random(n) < noise
    return X, np.where(flip, 1 - y, y)


def _naive_errors(W, B, X, y_priv, members, tol):
    """One candidate at a time: membership by a Python loop over its halfspaces."""
    if members is None:  # the empty hypothesis
        return int(np.sum(~y_priv))
    inside = np.ones(len(X), dtype=bool)
    for k in members:
        inside &= X @ W[k] <= B[k] + tol
    return int(np.sum(inside == y_priv))


def _brute_force(W, B, X, y_priv, k, tol, extra=()):
    """Errors of every candidate, in the order the estimator streams them."""
    cands = [None] + [c for m in range(1, k + 1) for c in combinations(range(len(W)), m)]
    cands += list(extra)
    return cands, [_naive_errors(W, B, X, y_priv, c, tol) for c in cands]


# --------------------------------------------------------------------------- utility


@pytest.mark.parametrize("eps", [0.5, 5.0])
def test_hull_learns_ball_and_beats_all_private_logistic(eps):
    errs, lr_errs = [], []
    for seed in range(3):
        X, y = _ball(600, seed)
        Xt, yt = _ball(4000, 100 + seed)
        clf = PPMHalfspaceClassifier(eps, candidates="hull", random_state=seed)
        errs.append(1 - clf.fit(X, y, public_mask=y == 0).score(Xt, yt))
        lr = DPLogisticRegression(eps, data_norm=math.sqrt(2), random_state=seed).fit(X, y)
        lr_errs.append(1 - lr.score(Xt, yt))
    assert np.mean(errs) < 0.06
    assert np.mean(errs) < np.mean(lr_errs) - 0.2


@pytest.mark.parametrize("candidates", ["hull", "net"])
def test_realizable_halfspace_is_learned(candidates):
    X, y = _halfspace(800, 0)
    Xt, yt = _halfspace(4000, 1)
    clf = PPMHalfspaceClassifier(1.0, candidates=candidates, random_state=0)
    assert clf.fit(X, y, public_mask=y == 0).score(Xt, yt) > 0.95


def test_net_is_robust_to_label_noise_where_hull_collapses():
    X, y = _halfspace(1000, 0, noise=0.1)
    Xt, yt = _halfspace(4000, 1, noise=0.1)
    scores = {
        c: PPMHalfspaceClassifier(1.0, candidates=c, random_state=0)
        .fit(X, y, public_mask=y == 0)
        .score(Xt, yt)
        for c in ("hull", "net")
    }
    assert scores["net"] > 0.84  # Bayes accuracy is 0.9
    assert scores["net"] > scores["hull"] + 0.15


def test_union_default_gets_the_better_family_on_clean_and_noisy_labels():
    from skhybrid.experiments.ppm import make_problem

    errs = {}
    for setting in ("realizable", "agnostic"):
        for seed in range(3):
            X, y, public, Xt, yt = make_problem("halfspace", 2, 2000, setting, seed)
            for c in ("hull", "net", "union"):
                clf = PPMHalfspaceClassifier(1.0, candidates=c, random_state=seed)
                err = float(np.mean(clf.fit(X, y, public_mask=public).predict(Xt) != yt))
                errs.setdefault((setting, c), []).append(err)
    m = {k: np.mean(v) for k, v in errs.items()}
    # Measured (4 seeds): clean hull .002 / net .014 / union .002; 10 % flipped labels
    # hull .300 / net .022 / union .024.
    for setting in ("realizable", "agnostic"):
        best = min(m[(setting, "hull")], m[(setting, "net")])
        assert m[(setting, "union")] <= best + 0.01
    assert PPMHalfspaceClassifier().candidates == "union"


# ------------------------------------------------------------ exactness of ε = inf


def _tiny(seed, n=16):
    X, y = _halfspace(n, seed)
    y[:2] = 1 - y[:2]  # not realizable: ties are rarer, the minimiser is informative
    return X, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_inf_is_the_first_brute_force_minimiser(seed):
    X, y = _tiny(seed)
    public = y == 0
    clf = PPMHalfspaceClassifier(np.inf, candidates="exact").fit(X, y, public_mask=public)
    W, B = supporting_halfspaces_exact(X[public])
    tol = membership_tolerance(X[public])
    cands, errors = _brute_force(W, B, X, y == 1, 2, tol)
    assert clf.n_candidates_ == len(cands)
    best = cands[int(np.argmin(errors))]
    train_errors = int(np.sum(clf.predict(X) != y))
    assert train_errors == min(errors)
    if best is None:
        assert clf.empty_hypothesis_
    else:
        np.testing.assert_array_equal(clf.halfspaces_[0], W[list(best)])
        np.testing.assert_array_equal(clf.halfspaces_[1], B[list(best)])


@pytest.mark.parametrize("candidates", ["hull", "net"])
def test_scalable_families_inf_is_brute_force_minimiser(candidates):
    X, y = _tiny(3, n=40)
    rows = X[y == 0]
    tol = membership_tolerance(rows)
    if candidates == "hull":
        W, B = hull_facets(rows)
        extra = [tuple(range(len(W)))]
    else:
        W, B = direction_net_halfspaces(rows, n_directions=4, quantiles=_NET_QUANTILES)
        nq = len(_NET_QUANTILES)
        extra = [tuple(range(j, len(W), nq)) for j in range(nq)]
    clf = PPMHalfspaceClassifier(np.inf, candidates=candidates, n_directions=4)
    clf.fit(X, y, public_mask=y == 0)
    cands, errors = _brute_force(W, B, X, y == 1, 2, tol, extra)
    assert clf.n_candidates_ == len(cands)
    assert int(np.sum(clf.predict(X) != y)) == min(errors)
    best = cands[int(np.argmin(errors))]
    np.testing.assert_array_equal(clf.halfspaces_[1], B[list(best)])


def test_exact_at_large_epsilon_agrees_with_its_erm():
    # Gumbel scale 2/ε = 0.01: a candidate one error worse wins with prob. < |G| e^-100.
    for seed in range(3):
        X, y = _tiny(seed)
        kw = dict(candidates="exact")
        erm = PPMHalfspaceClassifier(np.inf, **kw).fit(X, y, public_mask=y == 0)
        dp = PPMHalfspaceClassifier(200.0, random_state=seed, **kw).fit(X, y, public_mask=y == 0)
        assert np.sum(dp.predict(X) != y) == np.sum(erm.predict(X) != y)


def test_hull_and_exact_both_reach_zero_error_when_realizable():
    # Helly (Corollary 4.4): G, and the hull facets, contain a zero-error candidate.
    X, y = _halfspace(30, 4)
    for c in ("exact", "hull"):
        clf = PPMHalfspaceClassifier(np.inf, candidates=c).fit(X, y, public_mask=y == 0)
        assert np.all(clf.predict(X) == y), c


def test_public_points_on_a_line_in_r3():
    rng = np.random.default_rng(0)
    t = rng.uniform(-1, 1, size=8)
    direction = np.array([1.0, 2.0, -1.0]) / math.sqrt(6)
    X_pub = 0.3 + t[:, None] * direction
    X_priv = rng.normal(size=(12, 3))  # off the line almost surely
    # On the line beyond one end (realizable by a halfspace: k = 1 members suffice).
    X_priv[:3] = 0.3 + np.array([3.0, 4.0, 5.0])[:, None] * direction
    X = np.vstack([X_pub, X_priv])
    y = np.r_[np.zeros(8, int), np.ones(12, int)]
    for c in ("exact", "hull", "net"):
        clf = PPMHalfspaceClassifier(np.inf, candidates=c).fit(X, y, public_mask=y == 0)
        np.testing.assert_array_equal(clf.predict(X), y)
        assert clf.halfspaces_[0].shape[0] >= 4  # 2 (d - k) halfspaces cut out the line
    # the exact family there: 2 · 8 halfspaces, intersections of at most k = 1
    assert PPMHalfspaceClassifier(np.inf, candidates="exact").fit(
        X, y, public_mask=y == 0).n_candidates_ == 1 + 16


# ------------------------------------------------------------------ privacy plumbing


@pytest.mark.parametrize("candidates", ["exact", "hull", "net"])
@pytest.mark.parametrize("eps", [0.3, 2.0])
def test_noise_spy_matches_the_single_charged_event(candidates, eps):
    X, y = _tiny(1, n=20)
    acc = PrivacyAccountant(epsilon=5.0)
    clf = PPMHalfspaceClassifier(eps, candidates=candidates, accountant=acc, random_state=0)
    with record_noise() as draws:
        clf.fit(X, y, public_mask=y == 0)
    (event,) = clf.privacy_events_
    assert (event.mechanism, event.kind, event.epsilon, event.delta) == ("exponential", "pure", eps, 0)
    assert event.rho == pytest.approx(eps**2 / 8)
    assert event.params["gumbel_scale"] == pytest.approx(2.0 / eps)
    assert {(d.kind, d.tag) for d in draws} == {("exact_exponential", "ppm-exponential")}
    assert all(d.scale == pytest.approx(2.0 / eps) for d in draws)
    assert sum(d.count for d in draws) == clf.n_candidates_
    assert acc.spent("central") == (eps, 0.0)
    assert clf.privacy_spent_["central"] == (eps, 0.0)


def test_epsilon_inf_draws_nothing_and_records_a_nonprivate_event():
    X, y = _tiny(0)
    with record_noise() as draws:
        clf = PPMHalfspaceClassifier(np.inf).fit(X, y, public_mask=y == 0)
    assert draws == []
    assert [e.kind for e in clf.privacy_events_] == ["nonprivate"]
    with pytest.raises(BudgetExceededError):
        PPMHalfspaceClassifier(np.inf, accountant=PrivacyAccountant(epsilon=1.0)).fit(
            X, y, public_mask=y == 0)


def test_changing_public_rows_changes_the_class_never_the_accounting():
    X, y = _ball(200, 0)
    public = y == 0
    X2 = X.copy()
    X2[public] = np.random.default_rng(5).uniform(-0.5, 0.5, size=(public.sum(), 2))
    fits = []
    for data in (X, X2):
        for c in ("hull", "net"):
            acc = PrivacyAccountant(epsilon=10.0)
            clf = PPMHalfspaceClassifier(0.7, candidates=c, accountant=acc, random_state=0)
            fits.append((clf.fit(data, y, public_mask=public), acc))
    assert len({f.n_candidates_ for f, _ in fits}) > 1
    events = [f.privacy_events_ for f, _ in fits]
    assert all(e == events[0] for e in events)
    assert all(a.spent("central") == (0.7, 0.0) for _, a in fits)


def test_public_rows_with_the_private_label_do_not_inflate_the_hull():
    # Relaxation (ii): such rows are scored but do not build the hull / net.
    X, y = _ball(150, 1)
    public = y == 0
    X_out = np.array([[5.0, 5.0], [-4.0, 3.0]])
    Xa, ya = np.vstack([X, X_out]), np.r_[y, 1, 1]
    pa = np.r_[public, True, True]
    for c in ("hull", "net"):
        base = PPMHalfspaceClassifier(np.inf, candidates=c).fit(X, y, public_mask=public)
        more = PPMHalfspaceClassifier(np.inf, candidates=c).fit(Xa, ya, public_mask=pa)
        assert base.n_candidates_ == more.n_candidates_
        np.testing.assert_array_equal(more.predict(X_out), [1, 1])


def test_private_rows_with_the_public_label_are_accepted():
    # Relaxation (i): Lemma 4.1 holds for any replacement, so no data-dependent error.
    X, y = _ball(100, 2)
    public = y == 0
    y_bad = y.copy()
    y_bad[np.flatnonzero(~public)[:3]] = 0
    clf = PPMHalfspaceClassifier(1.0, random_state=0).fit(X, y_bad, public_mask=public)
    ref = PPMHalfspaceClassifier(1.0, random_state=0).fit(X, y, public_mask=public)
    assert clf.privacy_events_ == ref.privacy_events_
    assert clf.n_candidates_ == ref.n_candidates_


def test_n_jobs_gives_the_same_selection():
    X, y = _ball(300, 3)
    fits = [
        PPMHalfspaceClassifier(0.5, candidates="exact", n_jobs=j, random_state=7)
        .fit(X[:40], y[:40], public_mask=y[:40] == 0).halfspaces_
        for j in (None, 2)
    ]
    np.testing.assert_array_equal(fits[0][0], fits[1][0])


@pytest.mark.parametrize("n_jobs", [0, 1.5])
def test_invalid_n_jobs_is_refused_before_the_charge(n_jobs):
    # n_jobs=0 passed "Integral" and joblib refused it after epsilon was spent.
    X, y = _ball(200, 0)
    acc = PrivacyAccountant(epsilon=5.0)
    clf = PPMHalfspaceClassifier(1.0, n_jobs=n_jobs, accountant=acc, random_state=0)
    with pytest.raises(ValueError, match="n_jobs"):
        clf.fit(X, y, public_mask=y == 0)
    assert acc.events == [] and acc.spent("central") == (0.0, 0.0)


def test_negative_n_jobs_is_accepted():
    X, y = _ball(300, 3)
    clf = PPMHalfspaceClassifier(0.5, candidates="exact", n_jobs=-1, random_state=7)
    ref = PPMHalfspaceClassifier(0.5, candidates="exact", random_state=7)
    fits = [c.fit(X[:40], y[:40], public_mask=y[:40] == 0).halfspaces_ for c in (clf, ref)]
    np.testing.assert_array_equal(fits[0][0], fits[1][0])


# ------------------------------------------------------------- predictions and classes


def test_private_class_parameter_and_decision_sign():
    X, y = _ball(400, 4)
    labels = np.array(["healthy", "sick"])[y]  # classes_ = [healthy, sick]
    Xt, yt = _ball(2000, 5)
    lt = np.array(["healthy", "sick"])[yt]
    a = PPMHalfspaceClassifier(np.inf, candidates="hull").fit(X, labels, public_mask=y == 0)
    assert a.private_class_ == "sick"
    assert roc_auc_score(lt == "sick", a.decision_function(Xt)) > 0.97
    assert np.all((a.decision_function(Xt) > 0) == (a.predict(Xt) == "sick"))
    # "healthy" private (outside the ball): relabel so the geometry is the same
    flipped = np.array(["sick", "healthy"])[y]
    b = PPMHalfspaceClassifier(np.inf, candidates="hull", private_class="healthy")
    b.fit(X, flipped, public_mask=y == 0)
    assert b.private_class_ == "healthy"
    pred = b.predict(Xt)
    np.testing.assert_array_equal(pred == "healthy", a.predict(Xt) == "sick")
    # sklearn convention: positive decision means classes_[1] ("sick" = inside here)
    np.testing.assert_array_equal(b.decision_function(Xt) > 0, pred == "sick")


def test_no_public_rows_gives_the_empty_hypothesis():
    X, y = _ball(50, 6)
    clf = PPMHalfspaceClassifier(1.0, random_state=0).fit(X, y)  # public_mask=None
    assert clf.n_candidates_ == 1 and clf.empty_hypothesis_
    assert np.all(clf.predict(X) == 1)
    assert np.all(clf.decision_function(X) > 0)
    assert clf.privacy_spent_["central"] == (1.0, 0.0)


# ------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda X, y, m: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X), y, m), "NaN"),
        (lambda X, y, m: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.inf, X), y, m),
         "infinity"),
        (lambda X, y, m: (X, y, m[:-1]), "public_mask has"),
        (lambda X, y, m: (X, np.where(np.arange(len(y)) == 0, 2, y), m), "Only binary"),
        (lambda X, y, m: (X, np.zeros_like(y), m), "1 class"),
        (lambda X, y, m: (X, y, np.zeros_like(m)), "no public rows"),
        (lambda X, y, m: (X, y, np.ones_like(m)), "no private rows"),
    ],
)
def test_bad_input_raises_before_charging(mutate, match):
    X, y = _ball(40, 7)
    X, y, m = mutate(X, y, y == 0)
    acc = PrivacyAccountant(epsilon=5.0)
    with pytest.raises(ValueError, match=match):
        PPMHalfspaceClassifier(1.0, accountant=acc).fit(X, y, public_mask=m)
    assert acc.spent("central") == (0.0, 0.0)


def test_bad_parameters():
    X, y = _ball(40, 8)
    with pytest.raises(ValueError, match="private_class"):
        PPMHalfspaceClassifier(private_class=3).fit(X, y, public_mask=y == 0)
    with pytest.raises(ValueError, match="candidates"):
        PPMHalfspaceClassifier(candidates="all").fit(X, y, public_mask=y == 0)
    acc = PrivacyAccountant(epsilon=5.0)
    with pytest.raises(ValueError, match="max_candidates"):
        PPMHalfspaceClassifier(candidates="exact", max_candidates=1000, accountant=acc).fit(
            X, y, public_mask=y == 0)
    assert acc.spent("central") == (0.0, 0.0)


# --------------------------------------------------------------------------- routing

_LOG = []


class _RecordingPPM(PPMHalfspaceClassifier):
    def fit(self, X, y, *, public_mask=None):
        _LOG.append((np.asarray(X)[:, 0].astype(int), np.asarray(public_mask)))
        return super().fit(X, y, public_mask=public_mask)


def _routing_data():
    X0, y = _ball(90, 9)
    X = np.column_stack([np.arange(90), X0])
    return X, y, y == 0


def _check_log(mask, n_fits):
    assert len(_LOG) == n_fits
    for rows, received in _LOG:
        np.testing.assert_array_equal(received, mask[rows])


def test_cross_validate_and_grid_search_route_the_mask():
    X, y, mask = _routing_data()
    _LOG.clear()
    cross_validate(_RecordingPPM(np.inf), X, y, cv=KFold(3, shuffle=True, random_state=0),
                   params={"public_mask": mask})
    _check_log(mask, 3)
    _LOG.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no routing warning
        gs = GridSearchCV(_RecordingPPM(np.inf, classes=[0, 1]), {"candidates": ["hull", "net"]},
                          cv=KFold(3, shuffle=True, random_state=1))
        gs.fit(X, y, public_mask=mask)
    _check_log(mask, 2 * 3 + 1)
    _LOG.clear()


@pytest.mark.parametrize("candidates, advice, not_advised", [
    ("union", "candidates='hull' or 'net'", "n_directions"),
    ("hull", "candidates='net'", "'hull'"),
    ("net", "lower n_directions", "candidates='"),
])
def test_too_many_candidates_advises_only_other_families(candidates, advice, not_advised):
    X, y = _ball(40, 8)
    with pytest.raises(ValueError, match="max_candidates") as info:
        PPMHalfspaceClassifier(candidates=candidates, max_candidates=2, classes=[0, 1]).fit(
            X, y, public_mask=y == 0)
    message = str(info.value)
    assert advice in message and not_advised not in message.split("Raise max_candidates")[1]


@pytest.mark.parametrize("candidates", ["hull", "union"])
def test_many_dimensions_are_refused_before_the_hull(monkeypatch, candidates):
    # User round 19: on 30 features the default family ran Qhull for two minutes and then
    # raised a raw QhullError. The hull has at least k + 1 facets, so its family at least
    # 2^(k+1) candidates: refused before Qhull runs, before the charge.
    from skhybrid.ppm import _classifier

    def no_qhull(X):
        raise AssertionError("Qhull ran")

    monkeypatch.setattr(_classifier, "hull_facets", no_qhull)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 30))
    y = (rng.random(200) < 0.5).astype(int)
    acc = PrivacyAccountant(epsilon=5.0)
    with pytest.raises(ValueError, match=r"gives at least \d+ candidate hypotheses"):
        PPMHalfspaceClassifier(candidates=candidates, classes=[0, 1], accountant=acc).fit(
            X, y, public_mask=y == 0)
    assert acc.spent("central") == (0.0, 0.0)


def test_a_hull_beyond_qhull_is_refused_with_the_fix(monkeypatch):
    from scipy.spatial import QhullError

    from skhybrid.ppm import _classifier

    def failing(X):
        raise QhullError("QH6235 qhull error (qh_memalloc): negative request size")

    monkeypatch.setattr(_classifier, "hull_facets", failing)
    X, y = _ball(40, 8)
    acc = PrivacyAccountant(epsilon=5.0)
    with pytest.raises(ValueError, match=r"beyond Qhull.*PCA\(2\).*Nothing was charged"):
        PPMHalfspaceClassifier(candidates="hull", classes=[0, 1], accountant=acc).fit(
            X, y, public_mask=y == 0)
    assert acc.spent("central") == (0.0, 0.0)
