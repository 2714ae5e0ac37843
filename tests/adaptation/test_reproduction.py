"""The §7 reproduction of Bassily, Mohri & Suresh (``adaptation-fig1``, ``adaptation-fig2``).

Fast tests run the experiment functions at tiny sizes (structure, caching, invariants);
the ``slow`` test runs ``quick=True`` (the §7 constants, fewer n, ε and repetitions) and
asserts the orderings confirmed by the full run.
"""

import json
import math
import os

import numpy as np
import pytest

from skhybrid.adaptation import make_adaptation_data
from skhybrid.adaptation._discrepancy import discrepancy_matrix, spectral_norm
from skhybrid.experiments import available
from skhybrid.experiments import adaptation as exp

TINY = dict(exp.FULL, m=40, ns=(100, 200), epsilons=(1.0,), reps=2, md_reps=1, max_iter=15,
            md_max_iter=3, n_test=300)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("adaptation")
    rows = exp.adaptation_fig2(str(out), config=TINY, seed=3)
    return out, rows


def _cell(rows, method, eps, n):
    (hit,) = [r for r in rows if r["method"] == method and r["epsilon"] == eps and r["n"] == n]
    return hit


def test_registered():
    found = available()
    assert found["adaptation-fig1"] is exp.adaptation_fig1
    assert found["adaptation-fig2"] is exp.adaptation_fig2


def test_full_config_is_section_7():
    c = exp.FULL
    assert (c["m"], c["d"], c["max_iter"], c["lam"], c["delta"]) == (1000, 10, 1000, 1e-3, 1 / 8000)
    assert c["ns"][0] == 1000 and c["ns"][-1] == 8000 and c["reps"] == 10
    # quick keeps the §7 constants; only the grid and repetitions shrink.
    for key in ("m", "d", "max_iter", "lam", "delta"):
        assert exp.QUICK[key] == c[key]


def test_tiny_run_rows_and_figures(tiny_run):
    out, rows = tiny_run
    for name in ("adaptation_fig2.png", "adaptation_fig2_variants.png",
                 "adaptation_results.json"):
        assert os.path.getsize(out / name) > 0
    methods = set(exp.BASELINES) | set(exp.PRIVATE) | set(exp.VARIANTS)
    for n in TINY["ns"]:
        for method in exp.PRIVATE + tuple(exp.VARIANTS):
            r = _cell(rows, method, 1.0, n)
            assert r["metric"] == "mse" and np.isfinite(r["mean"]) and r["mean"] > 0
            assert r["reps"] == (TINY["md_reps"] if method == "two-stage-md" else TINY["reps"])
        for method in exp.BASELINES + exp.NONPRIVATE:  # the ε = ∞ references
            assert _cell(rows, method, math.inf, n)["reps"] >= 1
    assert {r["method"] for r in rows} == methods
    # no private "exact" or non-private noisy-moments row (exact is that reference)
    assert not [r for r in rows if r["method"] == "exact" and r["epsilon"] != math.inf]
    assert not [r for r in rows if r["method"] == "noisy-moments" and r["epsilon"] == math.inf]


def test_public_only_matches_direct_computation(tiny_run):
    out, _ = tiny_run
    with open(out / "adaptation_results.json") as fh:
        raw = json.load(fh)["rows"]
    D = make_adaptation_data(TINY["m"], max(TINY["ns"]), TINY["n_test"], random_state=3)
    m = TINY["m"]
    q = np.full(m, 1.0 / m)
    A = D.X_source.T @ (q[:, None] * D.X_source) + 1e-3 * np.eye(10)
    w = np.linalg.solve(A, D.X_source.T @ (q * D.y_source))
    for n in TINY["ns"]:
        (row,) = [r for r in raw if r["method"] == "public-only" and r["n"] == n and r["rep"] == 0]
        Xt = D.X_target[:n]
        disc = spectral_norm(discrepancy_matrix(Xt.T @ Xt / n, D.X_source, q))
        assert row["mse"] == pytest.approx(np.mean((D.X_test @ w - D.y_test) ** 2), rel=1e-10)
        assert row["disc"] == pytest.approx(disc, rel=1e-10)
    # the oracle has no source weights
    assert all(math.isnan(r["disc"]) for r in raw if r["method"] == "oracle")


def test_fig1_reuses_the_shared_run(tiny_run, monkeypatch, capsys):
    out, _ = tiny_run

    def boom(*args, **kwargs):
        raise AssertionError("the cached run should have been reused")

    monkeypatch.setattr(exp, "run_adaptation", boom)
    rows = exp.adaptation_fig1(str(out), config=TINY, seed=3)
    assert "reusing" in capsys.readouterr().out
    assert all(r["metric"] == "disc" for r in rows)
    assert os.path.getsize(out / "adaptation_fig1.png") > 0
    # ...but a different configuration recomputes.
    with pytest.raises(AssertionError, match="reused"):
        exp.adaptation_fig1(str(out), config=TINY, seed=4)


def test_summarize_mean_and_std():
    raw = [dict(method="a", epsilon=1.0, n=10, rep=k, mse=v, disc=math.nan, seconds=0.0)
           for k, v in enumerate([1.0, 2.0, 4.0])]
    (row,) = exp.summarize(raw, "mse")
    assert row["mean"] == pytest.approx(7 / 3) and row["std"] == pytest.approx(np.std([1, 2, 4]))
    assert exp.summarize(raw, "disc") == []  # all-NaN groups are dropped


def test_run_is_reproducible():
    cfg = dict(TINY, ns=(100,), reps=1, variants=False)
    a = exp.run_adaptation(cfg, seed=0, verbose=False)
    b = exp.run_adaptation(cfg, seed=0, verbose=False)
    assert [r["mse"] for r in a] == [r["mse"] for r in b]  # fully seeded


@pytest.mark.slow
def test_quick_reproduction_orderings(tmp_path):
    rows = exp.adaptation_fig2(str(tmp_path), quick=True)
    disc = exp.adaptation_fig1(str(tmp_path), quick=True)
    inf = math.inf
    for n in exp.QUICK["ns"]:
        public = _cell(rows, "public-only", inf, n)["mean"]
        exact = _cell(rows, "exact", inf, n)["mean"]
        # the oracle and exact discrepancy minimisation beat the source alone by ~3x
        assert _cell(rows, "oracle", inf, n)["mean"] < 0.5 * public
        assert exact < 0.5 * public
        for eps in exp.QUICK["epsilons"]:
            # (a) the paper's solvers with the §7 constants (K = 1000, Laplace) stay at
            # the public-only level
            for method in ("single-stage", "two-stage-fw", "two-stage-md"):
                assert _cell(rows, method, eps, n)["mean"] > 0.85 * public
            # (b) noisy-moments reaches exact once eps * n >= 8000
            nm = _cell(rows, "noisy-moments", eps, n)["mean"]
            assert nm < public
            if eps * n >= 8000:
                assert nm < 1.15 * exact
    # (c) fewer iterations make single-stage useful at eps = 10, n = 8000
    public = _cell(rows, "public-only", inf, 8000)["mean"]
    for method in ("single-stage K=100", "single-stage K=100 exp"):
        assert _cell(rows, method, 10.0, 8000)["mean"] < 0.8 * public
    # Fig. 1: the private Frank-Wolfe discrepancy falls with n at eps = 10
    for method in ("single-stage", "two-stage-fw"):
        assert (_cell(disc, method, 10.0, 8000)["mean"]
                < 0.8 * _cell(disc, method, 10.0, 1000)["mean"])
