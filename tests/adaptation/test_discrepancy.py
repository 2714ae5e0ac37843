import numpy as np
import pytest
from scipy import linalg

from skhybrid.adaptation._discrepancy import (
    adaptation_objective,
    clip_rows,
    discrepancy_gradient_sensitivity,
    discrepancy_lipschitz,
    discrepancy_matrix,
    discrepancy_smoothness,
    regularized_smoothed_discrepancy,
    second_moment,
    single_stage_constants,
    smoothed_discrepancy,
    smoothed_discrepancy_grad,
    smoothed_discrepancy_matrix_grad,
    smoothing_error_bound,
    spectral_norm,
)


def _random_sym(rng, d, scale=1.0):
    A = rng.normal(size=(d, d)) * scale
    return 0.5 * (A + A.T)


def _expm_value(M, mu):
    d = M.shape[0]
    B = np.zeros((2 * d, 2 * d))
    B[:d, :d], B[d:, d:] = mu * M, -mu * M
    return np.log(np.trace(linalg.expm(B))) / mu


def _instance(rng, m=12, n=30, d=4, r=1.0):
    X_src = rng.normal(size=(m, d)) / np.sqrt(d)
    T = clip_rows(rng.normal(size=(n, d)) / np.sqrt(d) + 0.3, r)
    q = rng.dirichlet(np.ones(m))
    return X_src, T, q


# ----------------------------------------------------------------- moments and clipping


def test_clip_rows_projects_onto_ball():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3)) * rng.uniform(0.1, 5, size=(50, 1))
    X[0] = 0.0
    Xc = clip_rows(X, 1.5)
    norms = np.linalg.norm(X, axis=1)
    inside = norms <= 1.5
    np.testing.assert_array_equal(Xc[inside], X[inside])
    np.testing.assert_allclose(np.linalg.norm(Xc[~inside], axis=1), 1.5)
    # same direction
    np.testing.assert_allclose(Xc[~inside] * norms[~inside, None] / 1.5, X[~inside])
    with pytest.raises(ValueError, match="r"):
        clip_rows(X, 0.0)


def test_second_moment_and_discrepancy_matrix_naive():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, 3))
    w = rng.uniform(size=7)
    naive = sum(w[i] * np.outer(X[i], X[i]) for i in range(7))
    np.testing.assert_allclose(second_moment(X, w), naive)
    np.testing.assert_allclose(second_moment(X), X.T @ X / 7)
    M0 = second_moment(rng.normal(size=(20, 3)))
    np.testing.assert_allclose(discrepancy_matrix(M0, X, w), M0 - naive)


# ----------------------------------------------------------------- value


@pytest.mark.parametrize("d,mu", [(1, 0.5), (3, 1.0), (5, 3.0), (6, 20.0)])
def test_value_matches_expm(d, mu):
    rng = np.random.default_rng(d)
    for _ in range(5):
        M = _random_sym(rng, d)
        assert smoothed_discrepancy(M, mu) == pytest.approx(_expm_value(M, mu), rel=1e-10)


def test_value_hand_computed_diagonal():
    # M = diag(1, -2), mu = 1: F = log(e + 1/e + e^-2 + e^2)
    M = np.diag([1.0, -2.0])
    expected = np.log(np.e + np.exp(-1) + np.exp(-2) + np.exp(2))
    assert smoothed_discrepancy(M, 1.0) == pytest.approx(expected, rel=1e-14)


def test_large_mu_is_stable_and_bounded():
    rng = np.random.default_rng(2)
    d = 6
    for _ in range(5):
        M = _random_sym(rng, d, scale=10.0)
        norm = spectral_norm(M)
        for mu in (1e-2, 1.0, 1e2, 1e4, 1e8):
            value, grad = smoothed_discrepancy_grad(M, rng.normal(size=(4, d)), mu)
            assert np.isfinite(value) and np.all(np.isfinite(grad))
            assert norm - 1e-12 * norm <= value <= norm + np.log(2 * d) / mu + 1e-12 * norm
        # mu -> inf: converges to the spectral norm
        assert smoothed_discrepancy(M, 1e10) == pytest.approx(norm, rel=1e-9)
    assert smoothing_error_bound(1e4, d) == pytest.approx(np.log(12) / 1e4)


def test_zero_matrix_value():
    # all 2d eigenvalues are 0: F = log(2d) / mu, the bound is attained
    assert smoothed_discrepancy(np.zeros((4, 4)), 2.0) == pytest.approx(np.log(8) / 2)


# ----------------------------------------------------------------- gradients


def test_matrix_gradient_finite_differences_and_expm_formula():
    rng = np.random.default_rng(3)
    d, mu = 4, 3.0
    M = _random_sym(rng, d)
    _value, G = smoothed_discrepancy_matrix_grad(M, mu)
    # expm/trace formula of BMS23 Corollary 1 proof: G = (E11 - E22) / Tr E
    B = np.zeros((2 * d, 2 * d))
    B[:d, :d], B[d:, d:] = mu * M, -mu * M
    E = linalg.expm(B)
    np.testing.assert_allclose(G, (E[:d, :d] - E[d:, d:]) / np.trace(E), atol=1e-12)
    # directional finite difference along a symmetric direction
    for _ in range(5):
        H = _random_sym(rng, d)
        h = 1e-5
        fd = (smoothed_discrepancy(M + h * H, mu) - smoothed_discrepancy(M - h * H, mu)) / (2 * h)
        assert fd == pytest.approx(np.sum(G * H), abs=1e-8)
    # ||G||_(1) <= 1
    assert np.abs(np.linalg.eigvalsh(G)).sum() <= 1 + 1e-12


@pytest.mark.parametrize("mu", [0.5, 5.0, 50.0])
def test_q_gradient_finite_differences(mu):
    rng = np.random.default_rng(4)
    X_src, T, q = _instance(rng)
    M0 = second_moment(T)
    _value, grad = smoothed_discrepancy_grad(discrepancy_matrix(M0, X_src, q), X_src, mu)
    h = 1e-6
    fd = np.empty_like(q)
    for i in range(q.size):
        e = np.zeros_like(q)
        e[i] = h
        fp = smoothed_discrepancy(discrepancy_matrix(M0, X_src, q + e), mu)
        fm = smoothed_discrepancy(discrepancy_matrix(M0, X_src, q - e), mu)
        fd[i] = (fp - fm) / (2 * h)
    np.testing.assert_allclose(grad, fd, atol=1e-7 * max(1.0, mu))
    # naive per-row formula -x_i^T G x_i
    _, G = smoothed_discrepancy_matrix_grad(discrepancy_matrix(M0, X_src, q), mu)
    np.testing.assert_allclose(grad, -np.einsum("id,de,ie->i", X_src, G, X_src), atol=1e-13)


def test_regularized_objective_gradient():
    rng = np.random.default_rng(5)
    X_src, T, q = _instance(rng)
    M0 = second_moment(T)
    lam = 0.3
    v, g = regularized_smoothed_discrepancy(q, M0, X_src, 4.0, lam)
    v0, g0 = smoothed_discrepancy_grad(discrepancy_matrix(M0, X_src, q), X_src, 4.0)
    assert v == pytest.approx(v0 + 0.5 * lam * q @ q)
    np.testing.assert_allclose(g, g0 + lam * q)


def test_adaptation_objective_both_blocks_finite_differences():
    rng = np.random.default_rng(6)
    X_src, T, q = _instance(rng)
    y = rng.normal(size=q.size)
    w = rng.normal(size=X_src.shape[1]) * 0.5
    M0 = second_moment(T)
    mu, Lam = 7.0, 1.3
    value, gq, gw = adaptation_objective(q, w, M0, X_src, y, mu, Lam)
    expected = q @ (X_src @ w - y) ** 2 + 4 * Lam**2 * smoothed_discrepancy(
        discrepancy_matrix(M0, X_src, q), mu
    )
    assert value == pytest.approx(expected, rel=1e-12)
    h = 1e-6

    def f(qq, ww):
        return adaptation_objective(qq, ww, M0, X_src, y, mu, Lam)[0]

    I_m, I_d = np.eye(q.size), np.eye(w.size)
    fd_q = np.array([(f(q + h * e, w) - f(q - h * e, w)) / (2 * h) for e in I_m])
    fd_w = np.array([(f(q, w + h * e) - f(q, w - h * e)) / (2 * h) for e in I_d])
    np.testing.assert_allclose(gq, fd_q, atol=1e-6)
    np.testing.assert_allclose(gw, fd_w, atol=1e-6)


# ----------------------------------------------------------------- Corollary 1 constants


def test_lipschitz_bound_corollary_1_part_4():
    rng = np.random.default_rng(7)
    for _ in range(20):
        X_src, T, q = _instance(rng, m=15, n=10, d=3)
        r_hat = np.linalg.norm(X_src, axis=1).max()
        for mu in (0.1, 10.0, 1e4):
            _, g = smoothed_discrepancy_grad(discrepancy_matrix(second_moment(T), X_src, q), X_src, mu)
            assert np.abs(g).max() <= discrepancy_lipschitz(r_hat) * (1 + 1e-12)


def test_smoothness_bound_corollary_1_part_2():
    rng = np.random.default_rng(8)
    worst = 0.0
    for _ in range(50):
        X_src, T, q = _instance(rng, m=6, n=10, d=3)
        M0 = second_moment(T)
        r_hat = np.linalg.norm(X_src, axis=1).max()
        mu = rng.choice([1.0, 10.0, 100.0])
        q2 = rng.dirichlet(np.ones(q.size) * 0.3)
        g1 = smoothed_discrepancy_grad(discrepancy_matrix(M0, X_src, q), X_src, mu)[1]
        g2 = smoothed_discrepancy_grad(discrepancy_matrix(M0, X_src, q2), X_src, mu)[1]
        ratio = np.abs(g1 - g2).max() / (discrepancy_smoothness(r_hat, mu) * np.abs(q - q2).sum())
        worst = max(worst, ratio)
    assert worst <= 1.0


def _sensitivity_ratio(rng, mu, r, bound, adversarial):
    m, n, d = 10, 8, 3
    X_src = rng.normal(size=(m, d)) / np.sqrt(d)
    r_hat = np.linalg.norm(X_src, axis=1).max()
    T = clip_rows(rng.normal(size=(n, d)), r)
    q = rng.dirichlet(np.ones(m))
    M = discrepancy_matrix(second_moment(T), X_src, q)
    if adversarial:
        # swap a row aligned with one eigenvector for a full-norm row along another:
        # the rank-two change that attains ||D||_2 = r^2 / n
        _, U = np.linalg.eigh(M)
        i, j = rng.choice(d, size=2, replace=False)
        T[0] = r * U[:, i]
        T2 = T.copy()
        T2[0] = r * U[:, j]
    else:
        T2 = T.copy()
        T2[rng.integers(n)] = clip_rows(rng.normal(size=(1, d)) * 3, r)[0]
    g1 = smoothed_discrepancy_grad(discrepancy_matrix(second_moment(T), X_src, q), X_src, mu)[1]
    g2 = smoothed_discrepancy_grad(discrepancy_matrix(second_moment(T2), X_src, q), X_src, mu)[1]
    s = discrepancy_gradient_sensitivity(r, r_hat, mu, n, bound=bound)
    return np.abs(g1 - g2).max() / s


@pytest.mark.parametrize("bound", ["paper", "tight"])
def test_gradient_sensitivity_corollary_1_part_3(bound):
    rng = np.random.default_rng(9)
    worst = 0.0
    for k in range(200):
        mu = [0.5, 5.0, 50.0, 500.0][k % 4]
        r = [0.5, 1.0, 2.0][k % 3]
        worst = max(worst, _sensitivity_ratio(rng, mu, r, bound, adversarial=k % 2 == 0))
    assert worst <= 1.0


def test_sensitivity_constants_by_hand():
    # paper: 2 mu r^2 r_hat^2 / n ; tight: half; l2: times sqrt(m)
    assert discrepancy_gradient_sensitivity(2.0, 3.0, 2.0, 10) == pytest.approx(2 * 2 * 4 * 9 / 10)
    assert discrepancy_gradient_sensitivity(2.0, 3.0, 2.0, 10, bound="tight") == pytest.approx(7.2)
    assert discrepancy_gradient_sensitivity(
        2.0, 3.0, 2.0, 10, norm="2", m=16
    ) == pytest.approx(14.4 * 4)
    assert discrepancy_smoothness(2.0, 3.0) == 48.0
    assert discrepancy_lipschitz(3.0) == 9.0
    with pytest.raises(ValueError, match="bound"):
        discrepancy_gradient_sensitivity(1.0, 1.0, 1.0, 10, bound="loose")
    with pytest.raises(ValueError, match="m"):
        discrepancy_gradient_sensitivity(1.0, 1.0, 1.0, 10, norm="2")
    with pytest.raises(ValueError, match="mu"):
        smoothed_discrepancy(np.eye(2), -1.0)


def test_single_stage_constants_section_5():
    # r = 1, r_hat = 2, Lambda = 3, Y = 0.5, mu = 10, n = 100
    c = single_stage_constants(1.0, 2.0, 3.0, 0.5, 10.0, 100)
    assert c["tau_q"] == pytest.approx(8 * 9 * 10 * 1 * 4 / 100)  # 8 L^2 mu r^2 r_hat^2 / n
    assert c["gamma_q"] == pytest.approx(6.5**2 + 4 * 9 * 4)
    assert c["gamma_w"] == pytest.approx(2 * 6.5 * 2)
    assert c["gamma_qw"] == pytest.approx(2 * 2 * 6.5)
    assert c["mu_q"] == pytest.approx(4 * 9 * 10 * 16)
    assert c["mu_w"] == pytest.approx(8.0)
    assert (c["D_q"], c["D_w"], c["tau_w"]) == (2.0, 6.0, 0.0)
    tight = single_stage_constants(1.0, 2.0, 3.0, 0.5, 10.0, 100, bound="tight")
    assert tight["tau_q"] == pytest.approx(c["tau_q"] / 2)


def test_w_hessian_reaches_two_r_hat_squared():
    # The paper's mu_w = r_hat^2 is too small: at a vertex q = e_i the w-Hessian of
    # sum_i q_i (w.x_i - y_i)^2 is 2 x_i x_i^T with norm 2 ||x_i||^2.
    rng = np.random.default_rng(10)
    X_src = rng.normal(size=(5, 3))
    i = np.argmax(np.linalg.norm(X_src, axis=1))
    r_hat = np.linalg.norm(X_src[i])
    q = np.eye(5)[i]
    y = rng.normal(size=5)
    M0 = second_moment(rng.normal(size=(9, 3)))
    h = 1e-4
    u = X_src[i] / r_hat
    w = rng.normal(size=3)
    g = [adaptation_objective(q, w + s * h * u, M0, X_src, y, 1.0, 1.0)[2] @ u for s in (1, -1)]
    curvature = (g[0] - g[1]) / (2 * h)
    assert curvature == pytest.approx(2 * r_hat**2, rel=1e-6)
    assert curvature <= single_stage_constants(1.0, r_hat, 1.0, 1.0, 1.0, 9)["mu_w"] * (1 + 1e-6)


def test_bad_inputs():
    with pytest.raises(ValueError, match="symmetric"):
        smoothed_discrepancy(np.array([[0.0, 1.0], [0.0, 0.0]]), 1.0)
    with pytest.raises(ValueError, match="q"):
        discrepancy_matrix(np.eye(2), np.ones((3, 2)), np.ones(2))
    with pytest.raises(ValueError, match="NaN"):
        second_moment(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="columns"):
        smoothed_discrepancy_grad(np.eye(2), np.ones((3, 4)), 1.0)


def test_tight_sensitivity_is_attained_in_one_dimension():
    # d = 1, x_src = r_hat = 1, q = 1, rows clipped to r = 2. T makes M(q) = +r^2/(2n);
    # replacing its norm-r row by 0 gives M(q) = -r^2/(2n). grad = -tanh(mu M), so the
    # change is 2 tanh(mu r^2 / (2n)) ~ mu r^2 r_hat^2 / n: the tight bound (half the
    # paper's) is attained as mu r^2 / n -> 0, hence cannot be improved.
    n, r, mu = 1000, 2.0, 1.0
    t = np.sqrt((n - 2) / (n - 1))
    T = np.concatenate([[[r]], np.full((n - 1, 1), t)])
    T2 = T.copy()
    T2[0] = 0.0
    X_src, q = np.ones((1, 1)), np.ones(1)
    M, M2 = (discrepancy_matrix(second_moment(A), X_src, q) for A in (T, T2))
    np.testing.assert_allclose([M[0, 0], M2[0, 0]], [r**2 / (2 * n), -(r**2) / (2 * n)])
    g1 = smoothed_discrepancy_grad(M, X_src, mu)[1]
    g2 = smoothed_discrepancy_grad(M2, X_src, mu)[1]
    change = abs(g1[0] - g2[0])
    tight = discrepancy_gradient_sensitivity(r, 1.0, mu, n, bound="tight")
    assert change <= tight
    assert change >= 0.9999 * tight
    assert change == pytest.approx(discrepancy_gradient_sensitivity(r, 1.0, mu, n) / 2, rel=1e-4)


def test_tight_sensitivity_cap_for_huge_mu():
    # mu r^2 > 2n: the cap 2 r_hat^2 (gradient coordinates live in [-r_hat^2, r_hat^2]).
    assert discrepancy_gradient_sensitivity(1.0, 3.0, 1e6, 10, bound="tight") == pytest.approx(18.0)
    rng = np.random.default_rng(11)
    worst = max(_sensitivity_ratio(rng, 1e5, 1.0, "tight", True) for _ in range(50))
    assert worst <= 1.0
