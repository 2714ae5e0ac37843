import math
from itertools import combinations

import numpy as np
import pytest

from skhybrid.ppm._candidates import (
    affine_hull,
    affine_hull_halfspaces,
    direction_net_halfspaces,
    exact_family_size,
    hull_facets,
    intersections_exact,
    membership_tolerance,
    supporting_halfspaces_exact,
)
from skhybrid.ppm._scoring import halfspace_violations


def _general_position(n, d, seed):
    return np.random.default_rng(seed).normal(size=(n, d))


def test_exact_family_count_d2_npub6():
    X = _general_position(6, 2, 0)
    W, B = supporting_halfspaces_exact(X)
    # 2 * (C(6,1) + C(6,2)) = 2 * 21 halfspaces; |G| = 1 + 42 + C(42, 2).
    assert W.shape == (42, 2) and B.shape == (42,)
    assert exact_family_size(6, 2) == (42, 1 + 42 + 861)
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0)
    # Opposite pairs are interleaved.
    np.testing.assert_allclose(W[1::2], -W[::2])
    np.testing.assert_allclose(B[1::2], -B[::2])


def test_exact_halfspaces_are_supported_by_their_subsets():
    X = _general_position(6, 2, 1)
    W, B = supporting_halfspaces_exact(X)
    subsets = [c for m in (1, 2) for c in combinations(range(6), m)]
    for s, subset in enumerate(subsets):
        for g in (2 * s, 2 * s + 1):
            np.testing.assert_allclose(X[list(subset)] @ W[g], B[g], atol=1e-12)
    # Singletons use the first axis (P = I, first maximal diagonal entry).
    np.testing.assert_allclose(np.abs(W[:12:2]), [[1.0, 0.0]] * 6)


def test_exact_family_count_d3():
    X = _general_position(5, 3, 2)
    W, _ = supporting_halfspaces_exact(X)
    assert W.shape[0] == 2 * (5 + 10 + 10) == exact_family_size(5, 3)[0]


def test_degenerate_subsets_are_deterministic_and_supported():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 2.0], [3.0, -1.0]])  # a repeated point
    W1, B1 = supporting_halfspaces_exact(X)
    W2, B2 = supporting_halfspaces_exact(X.copy())
    np.testing.assert_array_equal(W1, W2)
    np.testing.assert_array_equal(B1, B2)
    assert np.isfinite(W1).all()
    np.testing.assert_allclose(np.linalg.norm(W1, axis=1), 1.0)
    # The pair {0, 1} (identical points) comes after the 4 singletons: subset index 4.
    np.testing.assert_allclose(X[[0, 1]] @ W1[8], B1[8], atol=1e-12)


def test_no_or_one_public_point_gives_empty_family():
    assert supporting_halfspaces_exact(np.empty((0, 3)))[0].shape == (0, 3)
    assert supporting_halfspaces_exact(np.ones((1, 3)))[0].shape == (0, 3)
    assert exact_family_size(0, 2) == (0, 1)


def test_intersections_exact_matches_itertools_order_and_blocks():
    h, max_size = 9, 3
    blocks = list(intersections_exact(h, max_size, block_size=7))
    assert blocks[0].shape == (1, 0)
    assert all(len(b) <= 7 for b in blocks)
    tuples = [tuple(row) for b in blocks[1:] for row in b]
    expected = [c for m in range(1, max_size + 1) for c in combinations(range(h), m)]
    assert tuples == expected
    assert 1 + len(tuples) == 1 + sum(math.comb(h, m) for m in range(1, 4))


def test_intersections_exact_count_matches_formula_for_exact_family():
    X = _general_position(6, 2, 3)
    W, _ = supporting_halfspaces_exact(X)
    total = sum(len(b) for b in intersections_exact(W.shape[0], 2, block_size=100))
    assert total == exact_family_size(6, 2)[1] == 904


def test_intersections_include_all():
    blocks = list(intersections_exact(4, 2, include_all=True))
    np.testing.assert_array_equal(blocks[-1], [[0, 1, 2, 3]])
    # Not repeated when max_size already covers all members.
    assert list(intersections_exact(2, 2, include_all=True))[-1].shape == (1, 2)


def _same_halfspace(w, b, W, B, atol=1e-8):
    n = np.linalg.norm(w)
    return np.any(
        np.all(np.abs(W - w / n) < atol, axis=1) & (np.abs(B - b / n) < atol * (1 + abs(b)))
    )


@pytest.mark.parametrize("n, d, seed", [(8, 2, 0), (10, 2, 1), (7, 3, 2)])
def test_hull_facets_are_members_of_exact_family(n, d, seed):
    X = _general_position(n, d, seed)
    Wf, Bf = hull_facets(X)
    W, B = supporting_halfspaces_exact(X)
    assert Wf.shape[0] >= d + 1
    for w, b in zip(Wf, Bf):
        assert _same_halfspace(w, b, W, B)
    # Every facet contains every public point.
    assert not halfspace_violations(Wf, Bf, X, tol=membership_tolerance(X)).any()


def test_affine_hull_line_in_r3():
    rng = np.random.default_rng(4)
    direction = np.array([1.0, 2.0, -2.0]) / 3.0
    X = np.array([1.0, -1.0, 0.5]) + np.outer(rng.normal(size=8), direction)
    origin, basis = affine_hull(X)
    assert basis.shape == (3, 1)
    np.testing.assert_allclose(np.abs(basis[:, 0]), np.abs(direction), atol=1e-12)
    tol = membership_tolerance(X)
    Wa, Ba = affine_hull_halfspaces(origin, basis)
    assert Wa.shape == (4, 3)  # two opposite halfspaces per codimension
    assert not halfspace_violations(Wa, Ba, X, tol=tol).any()
    off = X[:3] + np.array([0.0, 1.0, 1.0]) * 0.1  # (0, 1, 1) is orthogonal to direction
    assert halfspace_violations(Wa, Ba, off, tol=tol).any(axis=0).all()

    # Exact family lives in the line: subsets of at most k = 1 point.
    W, _B = supporting_halfspaces_exact(X)
    assert W.shape == (16, 3) == (exact_family_size(8, 1)[0], 3)
    np.testing.assert_allclose(np.abs(W @ direction), 1.0)
    # Facets of the (1-d) hull: the extreme points; all public points inside.
    Wf, Bf = hull_facets(X)
    assert Wf.shape == (2, 3)
    assert not halfspace_violations(Wf, Bf, X, tol=tol).any()
    t = (X - origin) @ basis[:, 0]
    assert np.sum(np.abs(X @ Wf[0] - Bf[0]) < 1e-9) == 1
    offset = Bf[0] - Wf[0] @ origin
    assert np.isclose(offset, t.max()) or np.isclose(offset, -t.min())


def test_affine_hull_full_dimensional_has_no_extra_halfspaces():
    X = _general_position(5, 2, 5)
    origin, basis = affine_hull(X)
    assert basis.shape == (2, 2)
    assert affine_hull_halfspaces(origin, basis)[0].shape == (0, 2)


def test_direction_net_is_independent_of_private_rows():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(40, 2))
    public = rng.random(40) < 0.5
    X2 = X.copy()
    X2[~public] = rng.normal(size=((~public).sum(), 2)) * 100
    for net_rng in (None, 7):
        r1 = None if net_rng is None else np.random.default_rng(net_rng)
        r2 = None if net_rng is None else np.random.default_rng(net_rng)
        W1, B1 = direction_net_halfspaces(X[public], 8, (0.5, 0.9, 1.0), rng=r1)
        W2, B2 = direction_net_halfspaces(X2[public], 8, (0.5, 0.9, 1.0), rng=r2)
        np.testing.assert_array_equal(W1, W2)
        np.testing.assert_array_equal(B1, B2)


def test_direction_net_thresholds_are_public_order_statistics():
    X = _general_position(50, 2, 8)
    q = (0.5, 0.9, 1.0)
    W, B = direction_net_halfspaces(X, 12, q)
    assert W.shape == (36, 2)
    proj = X @ W.T
    # Each threshold is attained by a public point and covers at least a q-fraction.
    assert np.all(np.min(np.abs(proj - B), axis=0) < 1e-12)
    frac = (proj <= B + 1e-12).mean(axis=0).reshape(12, 3)
    assert np.all(frac >= np.array(q) - 1e-12)
    np.testing.assert_array_equal(frac[:, 2], 1.0)
    # Deterministic net in 2-d: equally spaced angles, opposite directions included.
    np.testing.assert_allclose(W[::3][6], -W[::3][0], atol=1e-12)


def test_direction_net_lower_dim_and_3d():
    rng = np.random.default_rng(9)
    X3 = rng.normal(size=(30, 3))
    W, B = direction_net_halfspaces(X3, 10, (1.0,))
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0)
    assert not halfspace_violations(W, B, X3, tol=membership_tolerance(X3)).any()
    line = np.outer(rng.normal(size=10), [0.0, 0.6, 0.8])
    Wl, _ = direction_net_halfspaces(line, 10, (0.5, 1.0))
    assert Wl.shape == (4, 3)  # the net on a line is {+1, -1}


@pytest.mark.parametrize(
    "call",
    [
        lambda: supporting_halfspaces_exact(np.array([[np.nan, 0.0]])),
        lambda: hull_facets(np.empty((0, 2))),
        lambda: affine_hull(np.zeros(3)),
        lambda: direction_net_halfspaces(np.ones((3, 2)), 0),
        lambda: direction_net_halfspaces(np.ones((3, 2)), 4, (0.0, 0.5)),
        lambda: list(intersections_exact(3, 2, block_size=0)),
    ],
)
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


def test_hull_facets_on_a_plane_in_r3_are_exact_members():
    X = _general_position(12, 3, 10)
    X[:, 2] = 0.5  # public points on a plane: Aff has dimension 2
    Wf, Bf = hull_facets(X)
    W, B = supporting_halfspaces_exact(X)
    assert W.shape[0] == exact_family_size(12, 2)[0]
    assert not halfspace_violations(Wf, Bf, X, tol=membership_tolerance(X)).any()
    for w, b in zip(Wf, Bf):
        assert _same_halfspace(w, b, W, B)
