"""Hybrid-model reproductions (Beimel et al., *The power of synergy*): two experiments.

``hybrid-separation``
    Parity XOR threshold (BKNSS §3): error of the hybrid protocol
    (:class:`~skhybrid.hybrid.ParityThresholdClassifier` with a curator mask), of the
    curator alone (the same class with ``curator_mask=None`` on the ``m`` curator rows:
    ε/2 on the blocks, ε/2 on a Laplace-tree CDF) and of the local agents alone
    (:class:`~skhybrid.hybrid.LocalThresholdClassifier` on the ``n`` agents: a threshold
    learner, since no local protocol with few rounds learns the parity, Lemma 3.2), over
    several ``(c, b, α, m, n)`` at ε = 1, with the paper's sample sizes (Lemma 3.3,
    Theorem 3.4, App. A) computed by :mod:`skhybrid.hybrid._constants`. Data: ``x``
    uniform on ``{0,1}^c``, ``t`` uniform on ``[0, 2^b)``, ``θ = ⌊0.37·2^b⌋``, a random
    parity; error on 20 000 fresh points.

``hybrid-protocols``
    The interaction-order simulations of :mod:`skhybrid.hybrid._protocols`: success
    rates over seeds of 1-out-of-2^d-parity (§4) and parity-chooses-secret (§5) in both
    orders, and §6's hypothesis test (curator / local / hybrid, Theorem 6.2's reduction).
"""

import os
import time

import numpy as np

from ._plotting import new_figure

__all__ = ["EXPERIMENTS", "hybrid_separation", "hybrid_protocols", "parity_threshold_data"]

BETA = 0.1


def parity_threshold_data(n, c, b, seed, theta_frac=0.37):
    """``X`` (c parity columns + threshold column last) and ``y = ⟨k, x⟩ ⊕ 1[t ≥ θ]``."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 2, c)
    theta = int(theta_frac * 2**b)
    X = np.column_stack([rng.integers(0, 2, (n, c)), rng.integers(0, 2**b, n)])
    return X, (X[:, :c] @ k + (X[:, -1] >= theta)) % 2


def _paper_sizes(c, b, alpha, epsilon):
    from ..hybrid._constants import (
        app_a_curator_size,
        app_a_local_size,
        lemma33_curator_size,
        lemma33_local_size,
    )

    return {
        "lemma33_m": lemma33_curator_size(c, alpha, BETA, epsilon),
        "lemma33_n": lemma33_local_size(b, alpha, BETA, epsilon),
        "app_a_m": app_a_curator_size(c, alpha, BETA, epsilon),
        "app_a_n": app_a_local_size(b, alpha, BETA, epsilon),
    }


def separation_errors(c, b, alpha, m, n, seed, epsilon=1.0, n_test=20_000):
    """Test errors ``{"hybrid", "curator", "local"}`` of one draw of the problem."""
    from ..hybrid import LocalThresholdClassifier, ParityThresholdClassifier

    X, y = parity_threshold_data(m + n + n_test, c, b, seed=10_000 + seed)
    Xt, yt = X[m + n:], y[m + n:]
    X, y = X[:m + n], y[:m + n]
    mask = np.arange(m + n) < m
    common = dict(threshold_bits=b, alpha=alpha, epsilon=epsilon, classes=[0, 1],
                  random_state=seed)
    hyb = ParityThresholdClassifier(**common).fit(X, y, curator_mask=mask)
    cur = ParityThresholdClassifier(**common).fit(X[mask], y[mask])
    loc = LocalThresholdClassifier(**common).fit(X[~mask], y[~mask])
    return {name: float(1 - est.score(Xt, yt))
            for name, est in (("hybrid", hyb), ("curator", cur), ("local", loc))}


def hybrid_separation(out_dir, quick=False, seed=0):
    """Hybrid vs curator-only vs local-only on parity XOR threshold; returns the rows."""
    from ..hybrid._constants import theorem34_sample_sizes

    settings = [(16, 10, 0.1, 10_000, 100_000), (12, 8, 0.2, 10_000, 50_000),
                (8, 8, 0.1, 10_000, 50_000), (16, 10, 0.1, 3_000, 100_000),
                (24, 12, 0.1, 20_000, 100_000), (16, 10, 0.1, 10_000, 20_000)]
    if not quick:
        settings += [(16, 10, 0.1, 5_000, 100_000), (32, 12, 0.1, 20_000, 100_000),
                     (8, 8, 0.1, 2_000, 50_000), (8, 8, 0.2, 2_000, 50_000)]
    seeds = range(seed, seed + (5 if quick else 10))
    rows = []
    header = (f"{'c':>3} {'b':>3} {'alpha':>5} {'m':>7} {'n':>7} | {'hybrid':>13} "
              f"{'curator-only':>13} {'local-only':>13} | {'L3.3 m':>9} {'L3.3 n':>9} "
              f"{'A m':>7} {'A n':>9}")
    print("hybrid-separation: test error, mean ± std over", len(seeds), "seeds, epsilon = 1")
    print(header)
    print("-" * len(header))
    start = time.time()
    for c, b, alpha, m, n in settings:
        errs = [separation_errors(c, b, alpha, m, n, s) for s in seeds]
        row = {"c": c, "b": b, "alpha": alpha, "m": m, "n": n, "epsilon": 1.0}
        for key in ("hybrid", "curator", "local"):
            vals = np.array([e[key] for e in errs])
            row[key], row[key + "_std"] = float(vals.mean()), float(vals.std())
        row.update(_paper_sizes(c, b, alpha, 1.0))
        rows.append(row)
        print(f"{c:>3} {b:>3} {alpha:>5.2f} {m:>7} {n:>7} | "
              + " ".join(f"{row[k]:.3f}±{row[k + '_std']:.3f}".rjust(13)
                         for k in ("hybrid", "curator", "local"))
              + f" | {row['lemma33_m']:>9.2e} {row['lemma33_n']:>9.2e} {row['app_a_m']:>7}"
              f" {row['app_a_n']:>9.2e}")
    tb, tm, tn = theorem34_sample_sizes(4)
    print(f"Theorem 3.4 at c = 4 (alpha = 1/72, beta = 1/16): b = {tb}, m = {tm:.3g}, "
          f"n = {tn:.3g}")
    print(f"({time.time() - start:.0f} s) Paper sizes at beta = {BETA}: Lemma 3.3 (m, n), "
          "App. A (m, n) — sufficient with this code's constants.")

    os.makedirs(out_dir, exist_ok=True)
    fig, ax = new_figure(figsize=(8, 4))
    x = np.arange(len(rows))
    for i, (key, label) in enumerate((("hybrid", "hybrid"), ("curator", "curator-only"),
                                      ("local", "local-only"))):
        ax.bar(x + (i - 1) * 0.27, [r[key] for r in rows], 0.27,
               yerr=[r[key + "_std"] for r in rows], label=label)
    ax.set_xticks(x, [f"c={r['c']} b={r['b']}\nα={r['alpha']} m={r['m']:.0e}\nn={r['n']:.0e}"
                      for r in rows], fontsize=7)
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_ylabel("test error")
    ax.set_title("Parity XOR threshold, ε = 1 (BKNSS §3)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "hybrid_separation.png"), dpi=120)
    return rows


def _rate(fn, seeds):
    return float(np.mean([fn(s) for s in seeds]))


def hybrid_protocols(out_dir, quick=False, seed=0):
    """§4, §5 interaction-order simulations and §6 hypothesis testing; returns the rows."""
    from ..hybrid._protocols import (
        OneOutOf2dParityTask,
        ParityChoosesSecretTask,
        hypothesis_testing,
        one_out_of_2d_parity,
        parity_chooses_secret,
    )

    n_seeds = 10 if quick else 20
    seeds = range(seed, seed + n_seeds)
    rows = []
    print(f"hybrid-protocols: success rate over {n_seeds} seeds")
    print(f"{'task':<24} {'(c, d, m, n, eps)':<26} {'order':<32} {'success':>8} {'paper bound':>24}")

    par4 = [(4, 3, 40, 400_000, 2.0)] + ([] if quick else [(6, 3, 80, 3_000_000, 1.0)])
    for c, d, m, n, eps in par4:
        bound = f"n·d vs c·2^d/ε: {n * d:.1e} vs {c * 2**d / eps:.0f}"
        for order, strategy, label in (("agents-first", "split", "agents → curator (Lemma 4.2)"),
                                       ("curator-first", "split", "curator → agents, split ε"),
                                       ("curator-first", "guess", "curator → agents, guess")):
            def run(s, order=order, strategy=strategy, c=c, d=d, m=m, n=n, eps=eps):
                rng = np.random.default_rng(s)
                task = OneOutOf2dParityTask(c, d, m, n, rng)
                return one_out_of_2d_parity(task, eps, rng, order=order,
                                            strategy=strategy).success
            rate = _rate(run, seeds)
            rows.append({"task": "1-out-of-2^d-parity", "c": c, "d": d, "m": m, "n": n,
                         "epsilon": eps, "order": label, "success": rate})
            print(f"{'1-out-of-2^d-parity':<24} {str((c, d, m, n, eps)):<26} {label:<32} "
                  f"{rate:>8.2f} {bound:>24}")

    par5 = [(8, 40, 250_000, 2.0)] + ([] if quick else [(24, 120, 2_000_000, 1.0)])
    for c, m, n, eps in par5:
        lb = (1 - 2 * 0.25) * 2**c / (3 * eps)  # Lemma 5.5 with β = 1/4
        bound = f"L5.5: n ≥ {lb:.3g}" + (" (bites)" if n < lb else "")
        for order, label in (("curator-first", "curator → agents (Lemma 5.2)"),
                             ("agents-first", "agents → curator, public groups")):
            def run(s, order=order, c=c, m=m, n=n, eps=eps):
                rng = np.random.default_rng(s)
                task = ParityChoosesSecretTask(c, m, n, rng)
                return parity_chooses_secret(task, eps, rng, order=order).success
            rate = _rate(run, seeds)
            rows.append({"task": "parity-chooses-secret", "c": c, "d": None, "m": m, "n": n,
                         "epsilon": eps, "order": label, "success": rate})
            print(f"{'parity-chooses-secret':<24} {str((c, m, n, eps)):<26} {label:<32} "
                  f"{rate:>8.2f} {bound:>24}")

    print("\n§6 simple hypothesis testing, a = 0.1, eps = 1 (success: worse of j = 0, 1)")
    print(f"{'m':>6} {'n':>6} {'curator':>8} {'local':>8} {'hybrid':>8} {'reduction':>10} "
          f"{'1/2+γ/4':>8} {'model':>8}")
    grid = [(25, 100), (100, 100), (25, 400), (100, 400), (50, 200)]
    rng = np.random.default_rng(seed)
    for m, n in grid:
        res = hypothesis_testing(0.1, m, n, 1.0, rng, n_trials=1000 if quick else 4000)
        rows.append({"task": "hypothesis-testing", "m": m, "n": n, "epsilon": 1.0, **res})
        print(f"{m:>6} {n:>6} {res['curator']:>8.3f} {res['local']:>8.3f} {res['hybrid']:>8.3f} "
              f"{res['reduction']:>10.3f} {res['reduction_bound']:>8.3f} "
              f"{res['reduction_model']:>8}")

    os.makedirs(out_dir, exist_ok=True)
    order_rows = [r for r in rows if r["task"] != "hypothesis-testing"]
    fig, ax = new_figure(figsize=(8, 4))
    ax.barh(np.arange(len(order_rows)), [r["success"] for r in order_rows])
    ax.set_yticks(np.arange(len(order_rows)),
                  [f"{r['task']} m={r['m']} n={r['n']:.0e}: {r['order']}" for r in order_rows],
                  fontsize=7)
    ax.set_xlabel("success rate")
    ax.set_xlim(0, 1)
    ax.set_title("Interaction order in the hybrid model (BKNSS §4, §5)")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "hybrid_protocols.png"), dpi=120)
    return rows


EXPERIMENTS = {"hybrid-separation": hybrid_separation, "hybrid-protocols": hybrid_protocols}
