import math

import numpy as np
import pytest
from scipy import stats

from skhybrid.mechanisms import exponential_mechanism
from skhybrid.mechanisms._noise import record_noise
from skhybrid.ppm._candidates import (
    affine_hull,
    affine_hull_halfspaces,
    direction_net_halfspaces,
    hull_facets,
    intersections_exact,
    membership_tolerance,
    supporting_halfspaces_exact,
)
from skhybrid.ppm._scoring import (
    containment_matrix,
    count_errors_blocked,
    error_weights,
    halfspace_violations,
    iter_error_blocks,
    streamed_exponential_mechanism,
)


def _naive_errors(W, B, X, is_priv, members, tol, region=None):
    """Per-candidate Python loop: predict, compare, count."""
    if len(members) == 0:
        pred_priv = np.ones(len(X), dtype=bool)
    else:
        inside = np.ones(len(X), dtype=bool)
        for k in members:
            inside &= X @ W[k] <= B[k] + tol
        if region is not None:
            inside &= region
        pred_priv = ~inside
    return int(np.sum(pred_priv != is_priv))


def _problem(d, n_pub, n, seed, lower_dim=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    public = np.zeros(n, dtype=bool)
    public[:n_pub] = True
    if lower_dim:
        X[public, -1] = 0.5  # public points on a hyperplane
        X[n_pub : n_pub + 3, -1] = 0.5  # a few private rows on it too
    # Relaxation (ii): some public rows carry the private class.
    is_priv = ~public | (rng.random(n) < 0.1)
    return X, public, is_priv


@pytest.mark.parametrize("d, n_pub, lower_dim", [(2, 6, False), (3, 5, False), (3, 6, True)])
def test_blocked_errors_equal_naive_loop(d, n_pub, lower_dim):
    X, public, is_priv = _problem(d, n_pub, 40, d, lower_dim)
    Xp = X[public]
    tol = membership_tolerance(Xp)
    W, B = supporting_halfspaces_exact(Xp)
    origin, basis = affine_hull(Xp)
    k = basis.shape[1]
    Wa, Ba = affine_hull_halfspaces(origin, basis)
    region = ~halfspace_violations(Wa, Ba, X, tol=tol).any(axis=0)
    assert lower_dim == (not region.all())
    C = containment_matrix(W, B, X, tol=tol)
    weights, n_pub_class = error_weights(is_priv, region)
    rng = np.random.default_rng(0)
    seen = 0
    for block in intersections_exact(W.shape[0], k, block_size=97):
        errors = count_errors_blocked(C, weights, n_pub_class, block)
        # Check a random subset of each block against the loop (all of small blocks).
        rows = rng.choice(len(block), size=min(len(block), 12), replace=False)
        for r in rows:
            assert errors[r] == _naive_errors(W, B, X, is_priv, block[r], tol, region)
        seen += len(block)
    assert seen > 1


def test_blocked_errors_any_order_and_full_hull():
    X, public, is_priv = _problem(2, 15, 60, 11)
    tol = membership_tolerance(X[public])
    W, B = hull_facets(X[public])
    C = containment_matrix(W, B, X, tol=tol)
    weights, n_pub_class = error_weights(is_priv)
    blocks = list(intersections_exact(W.shape[0], 2, include_all=True))
    allblock = blocks[-1]
    errs = count_errors_blocked(C, weights, n_pub_class, allblock)
    assert errs[0] == _naive_errors(W, B, X, is_priv, allblock[0], tol)
    pairs = blocks[2][np.random.default_rng(1).permutation(len(blocks[2]))]
    errs = count_errors_blocked(C, weights, n_pub_class, pairs)
    np.testing.assert_array_equal(
        errs, [_naive_errors(W, B, X, is_priv, p, tol) for p in pairs]
    )
    # Empty hypothesis: the public-class rows are its errors.
    assert count_errors_blocked(C, weights, n_pub_class, blocks[0])[0] == np.sum(~is_priv)


def test_halfspace_violations_matches_loop():
    rng = np.random.default_rng(3)
    W, B, X = rng.normal(size=(5, 3)), rng.normal(size=5), rng.normal(size=(20, 3))
    V = halfspace_violations(W, B, X)
    for k in range(5):
        for j in range(20):
            assert V[k, j] == (W[k] @ X[j] > B[k])
    assert containment_matrix(W, B, X).dtype == np.float32
    with pytest.raises(ValueError):
        halfspace_violations(W, B, X[:, :2])


def test_replacing_one_private_row_moves_every_score_by_at_most_one():
    X, public, is_priv = _problem(2, 6, 30, 4)
    W, B = supporting_halfspaces_exact(X[public])
    tol = membership_tolerance(X[public])
    X2 = X.copy()
    j = np.flatnonzero(~public)[0]
    X2[j] = [0.01, -0.02]  # move a private row deep into the public cloud
    diffs = []
    for Xc in (X, X2):
        C = containment_matrix(W, B, Xc, tol=tol)
        w, n0 = error_weights(is_priv)
        diffs.append(
            np.concatenate(
                [count_errors_blocked(C, w, n0, b) for b in intersections_exact(len(W), 2)]
            )
        )
    delta = np.abs(diffs[0] - diffs[1])
    assert delta.max() == 1


def test_exact_erm_is_consistent_in_realizable_case():
    # Corollary 4.4: some g in G has no more errors than the best halfspace (here 0).
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(60, 2))
    X = X[np.abs(X @ [1.0, 1.0] - 0.3) > 0.1]
    is_priv = X @ [1.0, 1.0] > 0.3
    public = ~is_priv
    Xp = X[public][:10]
    X = np.vstack([Xp, X[is_priv]])
    is_priv = np.r_[np.zeros(len(Xp), bool), np.ones(is_priv.sum(), bool)]
    for family in (supporting_halfspaces_exact, hull_facets):
        W, B = family(Xp)
        C = containment_matrix(W, B, X, tol=membership_tolerance(Xp))
        w, n0 = error_weights(is_priv)
        blocks = iter_error_blocks(C, w, n0, intersections_exact(len(W), 2, include_all=True))
        sel = streamed_exponential_mechanism(blocks, np.inf, 1.0, None)
        assert sel.score == 0.0


def test_epsilon_inf_is_exact_argmax_first_on_ties():
    blocks = [np.array([1.0, 3.0]), (np.array([0.0, 3.0, 2.0]), np.arange(10, 13)), np.array([3.0])]
    with record_noise() as draws:
        sel = streamed_exponential_mechanism(blocks, np.inf, 1.0, np.random.default_rng(0))
    assert (sel.index, sel.score, sel.candidate, sel.n_candidates) == (1, 3.0, None, 6)
    assert draws == []
    rng = np.random.default_rng(1)
    for _ in range(20):
        scores = rng.integers(-5, 5, size=37).astype(float)
        parts = np.split(scores, [5, 6, 20])
        assert streamed_exponential_mechanism(parts, np.inf, 1.0, None).index == np.argmax(scores)


def test_noise_goes_through_noise_module():
    with record_noise() as draws:
        rng = np.random.default_rng(0)
        streamed_exponential_mechanism([np.zeros(4), np.zeros(6)], 0.5, 2.0, rng)
    # One exact draw over all ten candidates, scale 1/γ = 2Δ/ε up to the lattice rounding.
    assert [(d.kind, d.count, d.tag) for d in draws] == [
        ("exact_exponential", 10, "ppm-exponential")]
    assert 8.0 <= draws[0].scale <= 8.0 * (1 + 2**-19)


def test_streamed_matches_naive_exponential_mechanism_in_distribution():
    scores = np.array([0.0, -1.0, -2.0, -0.5, -3.0, -1.5, -0.2, -4.0, -1.0, -2.5])
    epsilon, sensitivity, n_draws = 2.0, 1.0, 5000
    p = np.exp(epsilon * scores / (2 * sensitivity))
    p /= p.sum()
    parts = [scores[:3], scores[3:4], scores[4:]]
    rng = np.random.default_rng(12345)
    streamed = np.array(
        [
            streamed_exponential_mechanism(parts, epsilon, sensitivity, rng).index
            for _ in range(n_draws)
        ]
    )
    naive = np.array(
        [
            exponential_mechanism(scores, sensitivity=sensitivity, epsilon=epsilon, rng=rng)
            for _ in range(n_draws)
        ]
    )
    c_stream = np.bincount(streamed, minlength=10)
    c_naive = np.bincount(naive, minlength=10)
    alpha = 1e-6
    assert stats.chisquare(c_stream, n_draws * p).pvalue > alpha
    assert stats.chi2_contingency(np.vstack([c_stream, c_naive]))[1] > alpha


def test_n_jobs_gives_identical_selection():
    X, public, is_priv = _problem(2, 12, 200, 6)
    W, B = direction_net_halfspaces(X[public], 8, (0.5, 0.9, 1.0))
    C = containment_matrix(W, B, X, tol=membership_tolerance(X[public]))
    w, n0 = error_weights(is_priv)
    out = []
    for n_jobs in (None, 2):
        blocks = iter_error_blocks(C, w, n0, intersections_exact(len(W), 2, block_size=50))
        rng = np.random.default_rng(9)
        sel = streamed_exponential_mechanism(blocks, 1.0, 1.0, rng, n_jobs=n_jobs)
        out.append((sel.index, sel.score, tuple(sel.candidate), sel.n_candidates))
    assert out[0] == out[1]
    assert out[0][3] == 1 + 24 + 24 * 23 // 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"score_blocks": [np.zeros(2)], "epsilon": 0.0, "sensitivity": 1.0},
        {"score_blocks": [np.zeros(2)], "epsilon": 1.0, "sensitivity": 0.0},
        {"score_blocks": [], "epsilon": 1.0, "sensitivity": 1.0},
        {"score_blocks": [np.array([np.nan])], "epsilon": 1.0, "sensitivity": 1.0},
        {"score_blocks": [(np.zeros(2), [1])], "epsilon": 1.0, "sensitivity": 1.0},
    ],
)
def test_mechanism_bad_input(kwargs):
    with pytest.raises(ValueError):
        streamed_exponential_mechanism(rng=np.random.default_rng(0), **kwargs)


def test_chunked_runs_are_exact(monkeypatch):
    # Tiny work budget: every run gets its own BLAS call; results must not change.
    import skhybrid.ppm._scoring as scoring

    X, public, is_priv = _problem(3, 6, 50, 7)
    W, B = supporting_halfspaces_exact(X[public])
    C = containment_matrix(W, B, X, tol=membership_tolerance(X[public]))
    w, n0 = error_weights(is_priv)
    blocks = intersections_exact(len(W), 3)
    ref = np.concatenate([count_errors_blocked(C, w, n0, b) for b in blocks])
    monkeypatch.setattr(scoring, "_WORK_FLOATS", 60)
    small = np.concatenate(
        [count_errors_blocked(C, w, n0, b) for b in intersections_exact(len(W), 3, block_size=333)]
    )
    np.testing.assert_array_equal(ref, small)


def test_streamed_exact_law_with_ties_across_blocks_and_exclusions():
    # Integer scores (integer=True: γ = ε/2 exactly, no rounding); equal scores spread over
    # blocks must be equally likely (the per-level reservoir), -inf never chosen.
    scores = np.array([0.0, -1.0, -np.inf, -1.0, 0.0, -7.0, -1.0, -2.0, 0.0, -30.0])
    parts = [scores[:3], scores[3:4], np.array([]), scores[4:8], scores[8:]]
    eps, n = 2.0, 6_000
    w = np.where(np.isfinite(scores), np.exp(eps / 2 * np.nan_to_num(scores, neginf=0)), 0)
    w[~np.isfinite(scores)] = 0.0
    p = w / w.sum()
    rng = np.random.default_rng(4)
    got = np.array([streamed_exponential_mechanism(parts, eps, 1.0, rng, integer=True).index
                    for _ in range(n)])
    counts = np.bincount(got, minlength=scores.size)
    assert counts[2] == 0
    keep = p * n > 5
    assert stats.chisquare(counts[keep], p[keep] / p[keep].sum() * counts[keep].sum()
                           ).pvalue > 1e-6


def test_streamed_integer_flag_refuses_fractions_and_reports_the_winner():
    with pytest.raises(ValueError, match="scores must be integers"):
        streamed_exponential_mechanism([np.array([0.0, 0.5])], 1.0, 1.0,
                                       np.random.default_rng(0), integer=True)
    blocks = [(np.array([-3.0, -1.0]), ["a", "b"]), (np.array([-2.0]), ["c"])]
    sel = streamed_exponential_mechanism(blocks, 50.0, 1.0, np.random.default_rng(0),
                                         integer=True)
    assert (sel.index, sel.score, sel.candidate, sel.n_candidates) == (1, -1.0, "b", 3)


def test_kept_candidates_do_not_hold_their_blocks():
    blocks = [(np.array([-1.0, -2.0]), np.arange(8).reshape(4, 2)[:2])]
    sel = streamed_exponential_mechanism(blocks, 1.0, 1.0, np.random.default_rng(0),
                                         integer=True)
    assert sel.candidate.base is None  # a copy, not a view into the block's array


def test_streamed_law_with_one_best_candidate_among_many():
    # A best level of one candidate, 20,000 one error worse and a far level: the few
    # uniform proposals are nearly always rejected and the envelope over the levels
    # draws the level; its law must still be the exact one.
    scores = np.concatenate([[0.0], np.full(20_000, -1.0), np.full(5, -40.0)])
    eps, n = 14.0, 4_000  # γ = 7 per error
    w = np.array([1.0, 20_000 * math.exp(-7.0), 5 * math.exp(-280.0)])
    p = w / w.sum()
    rng = np.random.default_rng(9)
    parts = [scores[:7_000], scores[7_000:]]
    idx = np.array([streamed_exponential_mechanism(parts, eps, 1.0, rng, integer=True).index
                    for _ in range(n)])
    level = np.where(idx == 0, 0, np.where(idx <= 20_000, 1, 2))
    counts = np.bincount(level, minlength=3)
    assert counts[2] == 0
    assert stats.chisquare(counts[:2], p[:2] / p[:2].sum() * n).pvalue > 1e-6
    # Within the level the kept candidate is uniform (first half vs second half).
    inside = idx[level == 1]
    assert stats.binomtest(int((inside <= 10_000).sum()), inside.size, 0.5).pvalue > 1e-6


def test_containment_matrix_in_row_blocks_is_identical(monkeypatch):
    # Above _WORK_FLOATS entries the matrix is filled in blocks of rows; every entry is
    # the same dot product and comparison as in one product, so the result is identical.
    from skhybrid.ppm import _scoring

    rng = np.random.default_rng(4)
    W, B = rng.normal(size=(37, 3)), rng.normal(size=37)
    X = rng.normal(size=(5003, 3))
    X[:10] = X[:10] - ((X[:10] @ W[0] - B[0]) / (W[0] @ W[0]))[:, None] * W[0]  # on facet 0
    tol = 1e-9
    whole = containment_matrix(W, B, X, tol=tol)
    monkeypatch.setattr(_scoring, "_WORK_FLOATS", 1000)  # blocks of 27 rows
    blocked = containment_matrix(W, B, X, tol=tol)
    assert blocked.dtype == whole.dtype == np.float32 and blocked.flags.c_contiguous
    np.testing.assert_array_equal(blocked, whole)
    assert blocked[0, :10].all()
    np.testing.assert_array_equal(containment_matrix(W, B, X, tol=tol, dtype=np.float64), whole)


def test_containment_matrix_holds_no_float64_product_of_full_size(monkeypatch):
    # The (h, n) float64 product and boolean mask were 2.25x the float32 result (1.2 GB
    # beside it at 10^6 rows, 134 halfspaces); now temporaries stay within one block.
    import tracemalloc

    from skhybrid.ppm import _scoring

    monkeypatch.setattr(_scoring, "_WORK_FLOATS", 1 << 16)
    rng = np.random.default_rng(0)
    W, B, X = rng.normal(size=(64, 2)), rng.normal(size=64), rng.normal(size=(40_000, 2))
    tracemalloc.start()
    try:
        contain = containment_matrix(W, B, X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.25 * contain.nbytes


def test_ppm_fit_with_blocked_containment_is_identical(monkeypatch):
    from skhybrid.datasets import make_label_determined_halfspace
    from skhybrid.ppm import PPMHalfspaceClassifier, _scoring

    X, y = make_label_determined_halfspace(6000, n_features=2, label_noise=0.02,
                                           random_state=1)[:2]

    def fit():
        clf = PPMHalfspaceClassifier(epsilon=1.0, private_class=1, classes=[0, 1],
                                     random_state=2)
        return clf.fit(X, y, public_mask=y == 0)

    whole = fit()
    monkeypatch.setattr(_scoring, "_WORK_FLOATS", 4096)
    blocked = fit()
    for a, b in zip(whole.halfspaces_, blocked.halfspaces_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(whole.predict(X), blocked.predict(X))


@pytest.mark.parametrize("row_block, work", [(7, 50), (16, 1 << 23), (1, 3)])
def test_blocked_errors_in_row_blocks_are_identical(monkeypatch, row_block, work):
    # Rows are summed in blocks of _ROW_BLOCK so that a chunk's run count does not shrink
    # as n grows (each chunk re-read the whole containment matrix: n^2 memory traffic);
    # the partial sums are exact integers, so the counts are the same and match the loop.
    from skhybrid.ppm import _scoring

    X, public, is_priv = _problem(3, 6, 50, 3, True)
    tol = membership_tolerance(X[public])
    W, B = supporting_halfspaces_exact(X[public])
    origin, basis = affine_hull(X[public])
    Wa, Ba = affine_hull_halfspaces(origin, basis)
    region = ~halfspace_violations(Wa, Ba, X, tol=tol).any(axis=0)
    C = containment_matrix(W, B, X, tol=tol)
    weights, n_pub_class = error_weights(is_priv, region)
    blocks = list(intersections_exact(W.shape[0], basis.shape[1], block_size=61))
    whole = [count_errors_blocked(C, weights, n_pub_class, b) for b in blocks]
    monkeypatch.setattr(_scoring, "_ROW_BLOCK", row_block)
    monkeypatch.setattr(_scoring, "_WORK_FLOATS", work)
    for block, expected in zip(blocks, whole):
        np.testing.assert_array_equal(count_errors_blocked(C, weights, n_pub_class, block),
                                      expected)
    pair = blocks[-1][0]
    assert whole[-1][0] == _naive_errors(W, B, X, is_priv, pair, tol, region)
