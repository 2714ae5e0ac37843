import itertools

import numpy as np
import pytest
from scipy import stats

from skhybrid.mechanisms import gf2
from skhybrid.mechanisms._noise import record_noise
from skhybrid.mechanisms.gf2 import (
    _solve_affine_naive,
    pack_bits,
    rank,
    sample_affine_solution,
    solve_affine,
    unpack_bits,
)


@pytest.fixture(autouse=True, params=["columns", "grouped"])
def elimination_path(request, monkeypatch):
    """Run every test through both elimination kernels (one column / eight columns per step)."""
    monkeypatch.setattr(gf2, "_SMALL_N", 10**9 if request.param == "columns" else 0)
    return request.param


def _all_vectors(d):
    return np.array(list(itertools.product((0, 1), repeat=d)), dtype=np.uint8).reshape(2**d, d)


def _span(particular, null_basis):
    """All points of particular + span(null_basis), as a set of tuples."""
    k, d = null_basis.shape
    coeffs = _all_vectors(k)
    pts = (coeffs.astype(int) @ null_basis.astype(int) + particular) & 1
    return {tuple(v) for v in pts.reshape(-1, d)}


def _random_system(rng, n, d, planted):
    A = rng.integers(0, 2, (n, d), dtype=np.uint8)
    # Low-rank systems exercise free columns and dependent rows.
    if n and rng.random() < 0.5:
        A = (rng.integers(0, 2, (n, 2)) @ rng.integers(0, 2, (2, d)) & 1).astype(np.uint8)
    if planted:
        b = (A.astype(int) @ rng.integers(0, 2, d)) & 1
    else:
        b = rng.integers(0, 2, n)
    return A, b


@pytest.mark.parametrize("d", [1, 8, 63, 64, 65, 70, 130, 1024])
def test_pack_roundtrip_and_layout(d):
    rng = np.random.default_rng(d)
    X = rng.integers(0, 2, (5, d), dtype=np.uint8)
    P = pack_bits(X)
    assert P.dtype == np.uint64 and P.shape == (5, -(-d // 64))
    np.testing.assert_array_equal(unpack_bits(P, d), X)
    # Bit j % 64 of word j // 64 is coefficient j; padding bits are zero.
    for j in (0, d - 1, d // 2):
        E = np.zeros((1, d), dtype=np.uint8)
        E[0, j] = 1
        expected = np.zeros(P.shape[1], dtype=np.uint64)
        expected[j // 64] = np.uint64(1) << np.uint64(j % 64)
        np.testing.assert_array_equal(pack_bits(E)[0], expected)


def test_pack_rejects_non_binary():
    with pytest.raises(ValueError, match="0/1"):
        pack_bits([[0, 2]])
    with pytest.raises(ValueError, match="0/1"):
        pack_bits([[0.5, 1.0]])
    with pytest.raises(ValueError, match="2-dimensional"):
        pack_bits([0, 1])
    np.testing.assert_array_equal(pack_bits(np.array([[True, False, True]])), [[5]])


def test_packed_input_needs_n_features_and_clean_padding():
    P = pack_bits([[1, 0, 1]])
    with pytest.raises(ValueError, match="n_features"):
        solve_affine(P, [1])
    with pytest.raises(ValueError, match="beyond column"):
        rank(P, n_features=2)
    assert rank(P, n_features=3) == 1


def test_against_naive_solver():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n, d = int(rng.integers(0, 15)), int(rng.integers(1, 12))
        A, b = _random_system(rng, n, d, planted=rng.random() < 0.5)
        fast, naive = solve_affine(A, b), _solve_affine_naive(A, b)
        assert fast[0] == naive[0]
        # Reduced row-echelon form makes both the particular solution (free variables 0)
        # and the null basis canonical, so they must agree exactly.
        np.testing.assert_array_equal(fast[2], naive[2])
        if fast[0]:
            np.testing.assert_array_equal(fast[1], naive[1])
        else:
            assert fast[1] is None and naive[1] is None


def test_against_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n, d = int(rng.integers(0, 12)), int(rng.integers(1, 9))
        A, b = _random_system(rng, n, d, planted=rng.random() < 0.6)
        V = _all_vectors(d)
        sat = ((V.astype(int) @ A.T.astype(int)) & 1) == b  # (2^d, n)
        solutions = {tuple(v) for v in V[sat.all(axis=1)]}
        consistent, particular, null_basis = solve_affine(A, b)
        assert consistent == bool(solutions)
        k = null_basis.shape[0]
        # The null basis spans exactly the homogeneous solutions: count 2^k and independence.
        hom = {tuple(v) for v in V[(((V.astype(int) @ A.T.astype(int)) & 1) == 0).all(axis=1)]}
        assert _span(np.zeros(d, dtype=np.uint8), null_basis) == hom
        assert len(hom) == 2**k
        # Rank, float-free: rank = d - log2 |null(A)|.
        assert rank(A) == d - k
        if consistent:
            assert tuple(particular) in solutions
            assert _span(particular, null_basis) == solutions


@pytest.mark.parametrize("d", [70, 128, 130])
def test_wide_systems(d):
    """d not a multiple of 64, and d = 128 where the right-hand side needs an extra word."""
    rng = np.random.default_rng(d)
    n = d // 2
    A = rng.integers(0, 2, (n, d), dtype=np.uint8)
    r_star = rng.integers(0, 2, d)
    b = (A.astype(int) @ r_star) & 1
    consistent, particular, null_basis = solve_affine(pack_bits(A), b, n_features=d)
    assert consistent
    np.testing.assert_array_equal((A.astype(int) @ particular) & 1, b)
    assert not ((A.astype(int) @ null_basis.T.astype(int)) & 1).any()
    assert null_basis.shape == (d - rank(A), d)
    naive = _solve_affine_naive(A, b)
    np.testing.assert_array_equal(particular, naive[1])
    np.testing.assert_array_equal(null_basis, naive[2])
    # Flip one label of a row that the others span: inconsistent.
    A2 = np.vstack([A, A[0] ^ A[1]])
    b2 = np.append(b, 1 - (b[0] ^ b[1]))
    assert solve_affine(A2, b2)[0] is False
    assert _solve_affine_naive(A2, b2)[0] is False


def test_empty_system():
    consistent, particular, null_basis = solve_affine(np.zeros((0, 5), dtype=np.uint8), [])
    assert consistent
    np.testing.assert_array_equal(particular, np.zeros(5))
    np.testing.assert_array_equal(null_basis, np.eye(5))
    assert rank(np.zeros((0, 5))) == 0


def test_solve_rejects_bad_rhs():
    with pytest.raises(ValueError, match="b has 2 entries"):
        solve_affine([[1, 0]], [1, 0])
    with pytest.raises(ValueError, match="0/1"):
        solve_affine([[1, 0]], [3])


def test_sampling_is_uniform_over_affine_space():
    rng = np.random.default_rng(2)
    A = np.array([[1, 1, 0, 0, 0, 1], [0, 0, 1, 1, 0, 0]], dtype=np.uint8)
    b = np.array([1, 0])
    consistent, particular, null_basis = solve_affine(A, b)
    assert consistent and null_basis.shape[0] == 4
    n_draws = 20_000
    draws = np.array([sample_affine_solution(particular, null_basis, rng) for _ in range(n_draws)])
    np.testing.assert_array_equal((draws.astype(int) @ A.T) & 1, np.tile(b, (n_draws, 1)))
    codes = draws.astype(int) @ (1 << np.arange(6))
    _, counts = np.unique(codes, return_counts=True)
    assert counts.size == 16
    assert stats.chisquare(counts).pvalue > 1e-6


def test_sampling_goes_through_noise_helper():
    rng = np.random.default_rng(3)
    particular = np.array([1, 0, 0], dtype=np.uint8)
    null_basis = np.array([[0, 1, 0], [0, 0, 1]], dtype=np.uint8)
    with record_noise() as draws:
        sample_affine_solution(particular, null_basis, rng, tag="t")
    assert [(d.kind, d.count, d.tag) for d in draws] == [("integers", 2, "t")]
    # k = 0: the particular solution itself.
    out = sample_affine_solution(particular, np.zeros((0, 3), dtype=np.uint8), rng)
    np.testing.assert_array_equal(out, particular)
