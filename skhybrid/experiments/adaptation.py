"""Reproduction of Bassily, Mohri & Suresh (AISTATS 2023) §7: ``adaptation-fig1``, ``adaptation-fig2``.

Setting (§7, data from :func:`~skhybrid.adaptation.make_adaptation_data`): d = 10,
σ² = 1/(9d), target ``P_X`` a spherical Gaussian on the kink of the piecewise-linear label,
source the mixture 0.25 ``P_X`` + 0.75 ``Q_X``; m = 1000 labelled public source rows,
n = 1000 … 8000 unlabelled private target rows, K = 1000, λ = 0.001, δ = 1/8000. §7 does not
state μ, Λ, r, the ridge strength or the test-set size; we use μ = 100, Λ = r = 1, ridge
1e-3, stage 1 exactly as the paper's problem (5) (``noise_shrinkage=0``) and 10 000
labelled target test rows.

Within one repetition the source, the test set and a pool of 8000 target rows are drawn
once and the first n target rows are used, so the curves in n are nested.

Methods
-------
``public-only``
    Ridge on the uniformly weighted source (q uniform).
``oracle``
    Ridge on the *labelled* target rows (uses information no learner has).
``exact``
    Non-private Cortes–Mohri, ``solver="exact"`` (stage 1 by the numpy solver).
``single-stage``, ``two-stage-fw``, ``two-stage-md``
    BMS23 Algorithms 1–3 through :class:`~skhybrid.adaptation.DiscrepancyAdaptationRegressor`
    at each ε, and without noise (ε = ∞, the paper's "without privacy" curves).
``noisy-moments``
    Gaussian release of the target second moment, then the exact solver (beyond the paper).
``… K=100``, ``… exp``, ``… K=100 exp``
    The Frank-Wolfe solvers with K = 100 iterations and/or the exponential mechanism in
    place of Laplace report-noisy-min: what might make the paper's solvers useful.

Fig. 1 plots ‖M(q)‖₂ of the returned weights against the *raw* target second moment;
Fig. 2 the target test MSE. Both are mean ± std over the repetitions.

Cost: a single-stage or two-stage-fw fit with K = 1000 takes ~0.3 s, an SDP ~1 s, but a
two-stage-md fit ~10 s (its exact p-norm proximal step is two nested root searches per
iteration), so the full run repeats two-stage-md only ``md_reps`` times (3 by default).
``quick=True`` keeps the §7 constants but uses n ∈ {1000, 8000}, ε ∈ {1, 10},
2 repetitions (two-stage-md: 1 repetition with K = 100).

Both experiments share one computation: the first to run writes
``adaptation_results.json`` under ``out_dir`` and the other reuses it when its
configuration matches.
"""

import json
import math
import os
import time
import warnings

import numpy as np

from ._plotting import new_figure

__all__ = [
    "EXPERIMENTS",
    "FULL",
    "QUICK",
    "adaptation_fig1",
    "adaptation_fig2",
    "run_adaptation",
    "summarize",
]

FULL = dict(
    m=1000, d=10, ns=(1000, 2000, 4000, 8000), epsilons=(1.0, 3.0, 10.0), reps=10, md_reps=3,
    max_iter=1000, md_max_iter=1000, lam=1e-3, delta=1.0 / 8000, n_test=10000,
    variants=True,
)
QUICK = dict(FULL, ns=(1000, 8000), epsilons=(1.0, 10.0), reps=2, md_reps=1, md_max_iter=100)

PRIVATE = ("single-stage", "two-stage-fw", "two-stage-md", "noisy-moments")
VARIANTS = {
    "single-stage K=100": dict(solver="single-stage", max_iter=100),
    "two-stage-fw K=100": dict(solver="two-stage-fw", max_iter=100),
    "single-stage exp": dict(solver="single-stage", selection="exponential"),
    "two-stage-fw exp": dict(solver="two-stage-fw", selection="exponential"),
    "single-stage K=100 exp": dict(solver="single-stage", max_iter=100, selection="exponential"),
    "two-stage-fw K=100 exp": dict(solver="two-stage-fw", max_iter=100, selection="exponential"),
}
BASELINES = ("public-only", "oracle", "exact")
NONPRIVATE = ("single-stage", "two-stage-fw", "two-stage-md")
_COLORS = {"single-stage": "tab:blue", "two-stage-fw": "tab:orange", "two-stage-md": "tab:green",
           "noisy-moments": "tab:purple"}


# --------------------------------------------------------------------------- one run
def _fit(solver_kw, X, y, public, epsilon, delta, lam, rng):
    from ..adaptation import DiscrepancyAdaptationRegressor

    kw = dict(solver_kw)
    solver = kw.pop("solver")
    kw.setdefault("data_norm", 1.0)  # the paper's setting: rows of norm <= 1,
    kw.setdefault("fit_intercept", False)  # centred labels, hypotheses through the origin
    kw.setdefault("ridge_alpha", 1e-3)  # the reproduction's ridge (the estimator's is "auto")
    kw.setdefault("noise_shrinkage", 0.0)  # BMS23 problem (5) on the released moment, as is
    reg = DiscrepancyAdaptationRegressor(epsilon=epsilon, delta=delta, solver=solver, lam=lam,
                                         random_state=rng, **kw)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        # §7's labels are not centred, yet its hypotheses go through the origin (on purpose).
        warnings.filterwarnings("ignore", message="The public labels average")
        return reg.fit(X, y, public_mask=public)


def run_adaptation(config, seed=0, verbose=True):
    """Raw results of the §7 experiment: one dict per (method, ε, n, repetition).

    Parameters
    ----------
    config : dict
        Keys of :data:`FULL` (``m, d, ns, epsilons, reps, md_reps, max_iter, md_max_iter,
        lam, delta, n_test, variants``).
    seed : int, default=0
        Seeds the data (``seed + rep``) and, with (rep, n, ε, method), the privacy noise.
    verbose : bool, default=True
        Print one line per repetition.

    Returns
    -------
    rows : list of dict
        ``method, epsilon (inf when non-private), n, rep, mse, disc, seconds``; ``disc`` is
        ``||M(q)||_2`` against the raw target second moment (NaN for the oracle).
    """
    from ..adaptation import make_adaptation_data

    rows = []
    t_start = time.perf_counter()
    for rep in range(config["reps"]):
        D = make_adaptation_data(config["m"], max(config["ns"]), config["n_test"], config["d"],
                                 random_state=seed + rep)
        for n in config["ns"]:
            rows += _run_one(config, D, n, rep, seed)
        if verbose:
            print(f"[adaptation] repetition {rep + 1}/{config['reps']} done "
                  f"({time.perf_counter() - t_start:.0f} s)", flush=True)
    return rows


def _run_one(c, D, n, rep, seed):
    """Every method on the source and the first n target rows of one repetition."""
    from ..adaptation._discrepancy import discrepancy_matrix, spectral_norm
    from ..adaptation._exact import weighted_ridge

    m, K, delta, lam = c["m"], c["max_iter"], c["delta"], c["lam"]
    Xs, ys = D.X_source, D.y_source
    Xt, yt = D.X_target[:n], D.y_target[:n]
    X = np.vstack([Xs, Xt])
    y = np.concatenate([ys, np.full(n, np.nan)])  # target labels are never given
    public = np.arange(m + n) < m
    M0 = Xt.T @ Xt / n
    rows = []

    def record(method, eps, q, coef, seconds):
        disc = math.nan if q is None else spectral_norm(discrepancy_matrix(M0, Xs, q))
        mse = float(np.mean((D.X_test @ coef - D.y_test) ** 2))
        rows.append(dict(method=method, epsilon=eps, n=n, rep=rep, mse=mse,
                         disc=float(disc), seconds=seconds))

    def run(method, eps, kw, key):
        rng = np.random.default_rng([seed, rep, n, key])  # privacy noise of this fit
        t0 = time.perf_counter()
        reg = _fit(kw, X, y, public, eps, delta, lam, rng)
        record(method, eps, reg.sample_weights_, reg.coef_, time.perf_counter() - t0)

    q_unif = np.full(m, 1.0 / m)
    record("public-only", math.inf, q_unif, weighted_ridge(Xs, ys, q_unif, 1e-3)[0], 0.0)
    record("oracle", math.inf, None, weighted_ridge(Xt, yt, np.full(n, 1.0 / n), 1e-3)[0], 0.0)
    run("exact", math.inf, dict(solver="exact"), 0)
    jobs = [(s, dict(solver=s, max_iter=K)) for s in PRIVATE]
    if c["variants"]:
        jobs += list(VARIANTS.items())
    for e_idx, eps in enumerate((math.inf,) + tuple(c["epsilons"])):
        for j_idx, (method, kw) in enumerate(jobs):
            if eps == math.inf and method not in NONPRIVATE:
                continue  # "exact" is the non-private noisy-moments
            if method == "two-stage-md":
                if rep >= c["md_reps"]:
                    continue
                kw = dict(kw, max_iter=c["md_max_iter"])
            run(method, eps, kw, 1 + 100 * e_idx + j_idx)
    return rows


def summarize(raw, metric):
    """Mean ± std of ``metric`` (``"mse"`` or ``"disc"``) per (method, ε, n)."""
    groups = {}
    for r in raw:
        groups.setdefault((r["method"], r["epsilon"], r["n"]), []).append(r[metric])
    out = []
    for (method, eps, n), vals in groups.items():
        v = np.asarray(vals, dtype=float)
        if np.all(np.isnan(v)):
            continue
        out.append(dict(method=method, epsilon=eps, n=n, metric=metric, mean=float(np.mean(v)),
                        std=float(np.std(v)), reps=int(v.size)))
    return out


# --------------------------------------------------------------------------- caching
def _results(out_dir, quick, seed, config):
    config = dict(QUICK if quick else FULL) if config is None else dict(config)
    key = json.loads(json.dumps(dict(config, seed=seed)))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "adaptation_results.json")
    if os.path.exists(path):
        with open(path) as fh:
            cached = json.load(fh)
        if cached.get("config") == key:
            print(f"[adaptation] reusing {path}")
            return cached["rows"]
    raw = run_adaptation(config, seed=seed)
    with open(path, "w") as fh:
        json.dump({"config": key, "rows": raw}, fh, allow_nan=True)
    return raw


# --------------------------------------------------------------------------- output
def _label(method, eps):
    return f"{method} (ε=∞)" if eps == math.inf and method in NONPRIVATE else method


def print_table(summary, title, scale=1.0, unit="", digits=2):
    """One block per ε: rows are methods, columns n, cells ``mean ± std``."""
    ns = sorted({r["n"] for r in summary})
    cell = {(r["method"], r["epsilon"], r["n"]): r for r in summary}
    eps_private = sorted({r["epsilon"] for r in summary if r["epsilon"] != math.inf})
    fixed = [m for m in BASELINES + NONPRIVATE
             if any((m, math.inf, n) in cell for n in ns)]
    print(f"\n== {title}{unit} (mean ± std over repetitions) ==")
    head = f"{'method':<26}" + "".join(f"{'n=' + str(n):>16}" for n in ns)

    def line(method, eps):
        cells = []
        for n in ns:
            r = cell.get((method, eps, n))
            cells.append("—" if r is None else
                         f"{r['mean'] / scale:.{digits}f} ± {r['std'] / scale:.{digits}f}")
        return f"{_label(method, eps):<26}" + "".join(f"{s:>16}" for s in cells)

    print("non-private references")
    print(head)
    for method in fixed:
        print(line(method, math.inf))
    for eps in eps_private:
        methods = [m for m in dict.fromkeys(r["method"] for r in summary if r["epsilon"] == eps)]
        print(f"ε = {eps:g}")
        print(head)
        for method in methods:
            print(line(method, eps))


def _savefig(fig, out_dir, name):
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def _plot(summary, out_dir, name, ylabel, methods, scale=1.0, log=True):
    eps_private = sorted({r["epsilon"] for r in summary if r["epsilon"] != math.inf})
    cell = {(r["method"], r["epsilon"], r["n"]): r for r in summary}
    ns = sorted({r["n"] for r in summary})
    fig, axes = new_figure(1, len(eps_private), figsize=(4.2 * len(eps_private), 3.4),
                             sharey=True, squeeze=False)
    refs = [("public-only", "k", "-"), ("oracle", "tab:gray", ":"), ("exact", "k", "--")]
    refs += [(m, _COLORS[m], ":") for m in NONPRIVATE]  # the ε = ∞ runs, dotted
    spare = iter(["tab:red", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "gold"])
    colors = {m: _COLORS.get(m) or next(spare) for m in methods if m not in BASELINES}
    for ax, eps in zip(axes[0], eps_private):
        for method, color, style in refs:
            pts = [cell.get((method, math.inf, n)) for n in ns]
            if all(p is None for p in pts) or method not in methods:
                continue
            x = [n for n, p in zip(ns, pts) if p]
            y = np.array([p["mean"] for p in pts if p]) / scale
            ax.plot(x, y, style, color=color, lw=1.2, label=_label(method, math.inf))
        for method, color in colors.items():
            pts = [cell.get((method, eps, n)) for n in ns]
            if all(p is None for p in pts):
                continue
            x = np.array([n for n, p in zip(ns, pts) if p])
            y = np.array([p["mean"] for p in pts if p]) / scale
            s = np.array([p["std"] for p in pts if p]) / scale
            ax.errorbar(x, y, yerr=s, marker="o", ms=3, capsize=2, color=color, label=method)
        ax.set_title(f"ε = {eps:g}, δ = 1/8000")
        ax.set_xlabel("private target rows n")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.minorticks_off()
        if log:
            ax.set_yscale("log")
    axes[0][0].set_ylabel(ylabel)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, fontsize=8, loc="upper center", ncol=4,
               bbox_to_anchor=(0.5, 0.0), frameon=False)
    path = _savefig(fig, out_dir, name)
    return path


def _run(metric, out_dir, quick, seed, config):
    t0 = time.perf_counter()
    raw = _results(out_dir, quick, seed, config)
    summary = summarize(raw, metric)
    main = list(BASELINES) + list(PRIVATE)
    variants = list(BASELINES) + ["single-stage", "two-stage-fw"] + list(VARIANTS)
    if metric == "mse":
        print_table(summary, "adaptation-fig2: target test MSE", scale=1e-4, unit=" ×1e-4")
        paths = [_plot(summary, out_dir, "adaptation_fig2.png", "target test MSE", main),
                 _plot(summary, out_dir, "adaptation_fig2_variants.png", "target test MSE",
                       variants)]
    else:
        print_table(summary, "adaptation-fig1: ||M(q)||_2 of the returned weights", digits=3)
        paths = [_plot(summary, out_dir, "adaptation_fig1.png", "‖M(q)‖₂", main),
                 _plot(summary, out_dir, "adaptation_fig1_variants.png", "‖M(q)‖₂", variants)]
    print(f"\nfigures: {', '.join(paths)}; {time.perf_counter() - t0:.0f} s")
    return summary


def adaptation_fig1(out_dir, quick=False, seed=0, *, config=None):
    """BMS23 Fig. 1: ``||M(q)||_2`` of each solver's weights against n, per ε.

    Parameters
    ----------
    out_dir : str
        Where ``adaptation_fig1.png``, ``adaptation_fig1_variants.png`` and the shared
        ``adaptation_results.json`` go.
    quick : bool, default=False
        The reduced run of :data:`QUICK` (about a minute).
    seed : int, default=0
    config : dict, default=None
        Overrides :data:`FULL` / :data:`QUICK` entirely (tests use tiny sizes).

    Returns
    -------
    rows : list of dict
        ``method, epsilon, n, metric="disc", mean, std, reps``.
    """
    return _run("disc", out_dir, quick, seed, config)


def adaptation_fig2(out_dir, quick=False, seed=0, *, config=None):
    """BMS23 Fig. 2: target test MSE of each solver against n, per ε.

    Same parameters as :func:`adaptation_fig1`; rows have ``metric="mse"``.
    """
    return _run("mse", out_dir, quick, seed, config)


EXPERIMENTS = {"adaptation-fig1": adaptation_fig1, "adaptation-fig2": adaptation_fig2}
