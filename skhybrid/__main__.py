"""Command line: ``python -m skhybrid demo | reproduce NAME | budget LEDGER``."""

import argparse
import sys
import warnings

import numpy as np

__all__ = ["main"]


def _demo_logistic(accountant, seed):
    """DPLogisticRegression on breast cancer, 10% public rows, vs its non-private baseline."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from .learners import DPLogisticRegression
    from .preprocessing import PublicFitTransformer

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    public = np.random.default_rng(seed).random(len(ytr)) < 0.1
    # Scaling and a 5-d projection learnt from the public rows only: free, and fewer
    # dimensions means less noise for objective perturbation.
    reduce = make_pipeline(StandardScaler(), PCA(5))
    reduce = PublicFitTransformer(reduce).fit(Xtr, public_mask=public)
    Xtr, Xte = reduce.transform(Xtr), reduce.transform(Xte)
    params = dict(C=0.1, data_norm=3.0, classes=[0, 1])  # the label set is declared
    baseline = DPLogisticRegression(epsilon=np.inf, **params).fit(Xtr, ytr).score(Xte, yte)
    rows = []
    for eps in (0.1, 1.0, 5.0):
        clf = DPLogisticRegression(epsilon=eps, accountant=accountant, random_state=seed, **params)
        clf.fit(Xtr, ytr, public_mask=public)
        rows.append(("DPLogisticRegression", "breast cancer, 10% rows public", eps, "accuracy",
                     clf.score(Xte, yte), baseline, clf.privacy_spent_["central"]))
    return rows


def _demo_ppm(accountant, seed):
    """PPM halfspaces: the private class's rows are private, the public class's public."""
    from .datasets import make_label_determined_halfspace
    from .ppm import PPMHalfspaceClassifier

    X, y, public = make_label_determined_halfspace(3000, random_state=seed + 1)
    X_test, y_test, _ = make_label_determined_halfspace(5000, random_state=seed + 2)
    baseline = PPMHalfspaceClassifier(epsilon=np.inf, classes=[0, 1]).fit(X, y, public_mask=public)
    rows = []
    for eps in (0.1, 1.0):
        clf = PPMHalfspaceClassifier(epsilon=eps, classes=[0, 1], accountant=accountant,
                                     random_state=seed)
        clf.fit(X, y, public_mask=public)
        rows.append(("PPMHalfspaceClassifier", "2-D, one class public, 3k", eps, "accuracy",
                     clf.score(X_test, y_test), baseline.score(X_test, y_test),
                     clf.privacy_spent_["central"]))
    return rows


def _demo_adaptation(accountant, seed):
    """Adaptation from a labelled public source to an unlabelled private target (§7 data)."""
    from .adaptation import DiscrepancyAdaptationRegressor, make_adaptation_data

    data = make_adaptation_data(1000, 4000, 5000, random_state=seed + 3)
    X = np.vstack([data["X_source"], data["X_target"]])
    y = np.r_[data["y_source"], np.full(len(data["X_target"]), np.nan)]  # target unlabelled
    public = np.arange(len(y)) < len(data["X_source"])
    paper = dict(data_norm=1.0, fit_intercept=False)  # section 7's setting
    exact = DiscrepancyAdaptationRegressor(solver="exact", epsilon=np.inf, **paper)
    baseline = exact.fit(X, y, public_mask=public).predict(data["X_test"])
    base_mse = np.mean((baseline - data["y_test"]) ** 2)
    rows = []
    for eps in (1.0, 10.0):
        reg = DiscrepancyAdaptationRegressor(epsilon=eps, delta=1e-6, accountant=accountant,
                                             random_state=seed, **paper)
        pred = reg.fit(X, y, public_mask=public).predict(data["X_test"])
        rows.append(("DiscrepancyAdaptation", "shift: 1k public, 4k private", eps, "MSE x1e4",
                     1e4 * np.mean((pred - data["y_test"]) ** 2), 1e4 * base_mse,
                     reg.privacy_spent_["central"]))
    return rows


def _demo_hybrid(accountant, seed):
    """Parity XOR threshold: 10k curator rows + 50k local agents."""
    from .datasets import make_parity_threshold
    from .hybrid import ParityThresholdClassifier

    X, y, _ = make_parity_threshold(70_000, n_parity=8, threshold_bits=8, random_state=seed + 4)
    X_test, y_test, X, y = X[60_000:], y[60_000:], X[:60_000], y[:60_000]
    curator = np.arange(60_000) < 10_000
    params = dict(alpha=0.1, threshold_bits=8, classes=[0, 1])
    baseline = ParityThresholdClassifier(epsilon=np.inf, **params).fit(X, y, curator_mask=curator)
    clf = ParityThresholdClassifier(epsilon=1.0, accountant=accountant, random_state=seed, **params)
    clf.fit(X, y, curator_mask=curator)
    spent = clf.privacy_spent_
    return [("ParityThreshold (hybrid)", "10k curator rows", 1.0, "accuracy",
             clf.score(X_test, y_test), baseline.score(X_test, y_test), spent["central"]),
            ("  ... its local agents", "50k agents, 1 report each", 1.0, "", np.nan, np.nan, spent["local"])]


def _demo_transfer(accountant, seed):
    """STR (Algorithm 4, private SGD) on KS App. D's ellipse shift, and ParityTransfer."""
    from .experiments.transfer import ellipse_shift
    from .learners._parity_core import predict_parity
    from .transfer import NoisySGDClassifier, ParityTransfer, SubsampleTestReweigh

    rng = np.random.default_rng(seed + 5)
    X, y, curator, X_test, y_test = ellipse_shift(200_000, 250_000, 20_000, d=8, k=2,
                                                  sigma_s=0.1, sigma_t=0.07, quantile=0.4,
                                                  rng=rng)
    X, X_test = X / 0.01, X_test / 0.01
    params = dict(alpha=0.08, chi2_bound=0.3515, max_iter=5, local_batch_size=50_000,
                  classes=[-1, 1])
    sgd = NoisySGDClassifier(n_steps=20_000, lipschitz=1.0, radius=3.0, loss="hinge",
                             classes=[-1, 1])
    baseline = SubsampleTestReweigh(sgd, epsilon=np.inf, random_state=seed, **params)
    baseline.fit(X, y, curator_mask=curator)
    clf = SubsampleTestReweigh(sgd, epsilon=0.5, delta=1e-4, kappa=0.08 / (4 * 1.3515),
                               accountant=accountant, random_state=seed, **params)
    clf.fit(X, y, curator_mask=curator)
    rows = [("SubsampleTestReweigh", "shift: 200k curator, 250k agents", 0.5, "accuracy",
             clf.score(X_test, y_test), baseline.score(X_test, y_test),
             clf.privacy_spent_["central"])]

    # Parity from a biased source (curator) checked on a uniform target (agents).
    secret = rng.integers(0, 2, 12)
    Xp = np.vstack([(rng.random((4000, 12)) < 0.3).astype(int), rng.integers(0, 2, (4000, 12))])
    yp, held = predict_parity(secret, Xp), np.arange(8000) < 4000
    X_new = rng.integers(0, 2, (5000, 12))
    base = ParityTransfer(epsilon=np.inf, classes=[0, 1]).fit(Xp, yp, curator_mask=held)
    par = ParityTransfer(epsilon=1.0, classes=[0, 1], accountant=accountant, random_state=seed)
    par.fit(Xp, yp, curator_mask=held)
    truth = predict_parity(secret, X_new)
    rows.append(("ParityTransfer", "12 bits: 4k curator, 4k agents", 1.0, "accuracy",
                 np.mean(par.predict(X_new) == truth), np.mean(base.predict(X_new) == truth),
                 par.privacy_spent_["central"]))
    return rows


def _demo_hybrid_extras(accountant, seed):
    """The private parity learner alone, and select-then-estimate (BKNSS App. B)."""
    from .hybrid import SelectThenEstimate
    from .learners import PrivateParityClassifier
    from .learners._parity_core import predict_parity

    rng = np.random.default_rng(seed + 6)
    secret = rng.integers(0, 2, 16)
    X = rng.integers(0, 2, (6000, 16))
    X_test = rng.integers(0, 2, (5000, 16))
    y, y_test = predict_parity(secret, X), predict_parity(secret, X_test)
    base = PrivateParityClassifier(epsilon=np.inf, classes=[0, 1]).fit(X, y)
    clf = PrivateParityClassifier(epsilon=1.0, classes=[0, 1], accountant=accountant,
                                  random_state=seed)
    clf.fit(X, y)
    rows = [("PrivateParityClassifier", "16 bits, 6k private rows", 1.0, "accuracy",
             clf.score(X_test, y_test), base.score(X_test, y_test),
             clf.privacy_spent_["central"])]

    mean = np.zeros(40)
    mean[7] = 0.6
    Z = np.where(rng.random((60_000, 40)) < (1 + mean) / 2, 1, -1)
    curator = np.arange(60_000) < 2000
    exact = SelectThenEstimate(epsilon=np.inf).fit(Z, curator_mask=curator)
    est = SelectThenEstimate(epsilon=1.0, accountant=accountant, random_state=seed)
    est.fit(Z, curator_mask=curator)
    rows.append(("SelectThenEstimate", "40 coins: 2k curator, 58k agents", 1.0, "|error|",
                 abs(est.estimate_ - mean[est.selected_index_]),
                 abs(exact.estimate_ - mean[exact.selected_index_]), est.privacy_spent_["central"]))
    return rows


def _demo_search(accountant, seed):
    """A private hyperparameter search of DPLogisticRegression: one charge for it all."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from .learners import DPLogisticRegression
    from .model_selection import PrivateSearchCV

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    public = np.random.default_rng(seed).random(len(ytr)) < 0.1
    scaler = StandardScaler().fit(Xtr[public])  # public rows' statistics: free
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    grid = {"C": [0.01, 0.1, 1.0, 10.0], "data_norm": [2.0, 5.0]}
    base = PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), grid, epsilon=np.inf)
    base.fit(Xtr, ytr, public_mask=public)
    search = PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), grid, epsilon=1.0,
                             accountant=accountant, random_state=seed)
    search.fit(Xtr, ytr, public_mask=public)
    return [("PrivateSearchCV", "breast cancer, 8 candidates tuned", 1.0,
             "accuracy", search.score(Xte, yte), base.score(Xte, yte),
             search.privacy_spent_["central"])]


DEMOS = [_demo_logistic, _demo_search, _demo_ppm, _demo_adaptation, _demo_hybrid,
         _demo_transfer, _demo_hybrid_extras]


_INTRO = """\
Every skhybrid learner, fitted privately and compared with the same algorithm run without
noise (epsilon = inf) on the same data. Each row is one fit:
  data      what the learner saw; "public" rows have no privacy requirement, "curator"
            rows are held by a trusted party (central DP), "agents" each send one
            randomized report (local DP);
  private   its score on held-out test rows (accuracy, or the metric named);
  baseline  the non-private run's score;
  spent     the (epsilon, delta) this fit charged to the shared accountant.
"""

_OUTRO = """\
Reading the table
  * A private score can match or beat its baseline. The baseline is the same algorithm
    without noise, not the best possible model; on a finite test set two close models
    differ by chance, and some learners (PPM, the parity learners) select among
    hypotheses built from public rows, where noise rarely changes the choice.
  * DPLogisticRegression scores the same at every epsilon here: it checks on the public
    rows whether the DP model beats a model fitted on the public rows alone, and with
    10% public rows it does not, so the public model is released. The charge is the same
    either way (the check only reads public rows and the DP output).
  * The accountant's totals are per population, not the sum of the "spent" column:
    agents are a separate population with their own budget, and within a population the
    accountant reports the tightest valid composition of all the events, never above
    adding the epsilons up (equal when basic composition is the tightest): central rows
    {total:.4g} added up, {spent:.4g} by {view} composition.
"""


def demo(seed=0, out=sys.stdout):
    """Run every learner against its non-private baseline and print a table."""
    from .accounting import PrivacyAccountant
    from .exceptions import SeedReuseWarning

    accountant = PrivacyAccountant(epsilon={"central": 100.0, "local": 10.0}, delta=1e-3)
    print(_INTRO, file=out)
    header = (f"{'learner':<24} {'data':<34} {'epsilon':>7} {'metric':<9} {'private':>8} "
              f"{'baseline':>9} {'spent (eps, delta)':>19}")
    print(header, file=out)
    print("-" * len(header), file=out)
    central_sum = 0.0
    for run in DEMOS:
        with warnings.catch_warnings():
            # A demo is a reproduction: seeded on purpose (releases use random_state=None).
            warnings.simplefilter("ignore", SeedReuseWarning)
            rows = run(accountant, seed)
        for name, data, eps, metric, value, base, spent in rows:
            value, base = (("-" if np.isnan(v) else f"{v:.3f}") for v in (value, base))
            if not name.startswith(" "):
                central_sum += spent[0]
            print(f"{name:<24} {data:<34} {eps:>7.3g} {metric:<9} {value:>8} {base:>9} "
                  f"{f'({spent[0]:.3g}, {spent[1]:.2g})':>19}", file=out)
    print("\n" + accountant.report(), file=out)
    from .accounting._accountant import best_view

    view, (spent, _) = best_view(accountant.views("central"))
    print("\n" + _OUTRO.format(view=view, total=central_sum, spent=spent), file=out)


def budget(ledger, out=None):
    """Print the report of a ledger written by ``PrivacyAccountant(ledger=...)``: a SQLite
    path or a ``postgresql://`` URL.

    Raises ``ValueError`` for a path or URL with no ledger (nothing is created).
    """
    from .accounting import PrivacyAccountant

    print(PrivacyAccountant.from_ledger(ledger).report(), file=out or sys.stdout)


_DESCRIPTION = "Differentially private learners for mixed-trust data: command-line tools."

_EPILOG = """\
examples:
  python -m skhybrid demo --seed 1
  python -m skhybrid reproduce
  python -m skhybrid reproduce ppm-halfspaces --quick --out figures
  python -m skhybrid budget privacy.sqlite
"""


def _parser():
    plain = argparse.RawDescriptionHelpFormatter  # keeps the epilog's line breaks
    parser = argparse.ArgumentParser(prog="python -m skhybrid", description=_DESCRIPTION,
                                     epilog=_EPILOG, formatter_class=plain)
    sub = parser.add_subparsers(title="commands", dest="command", required=True)
    p_demo = sub.add_parser(
        "demo", help="every learner, private and non-private, side by side",
        description="Fit every learner privately on bundled or generated data and print "
                    "its score next to the same algorithm run without noise.")
    p_demo.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p_rep = sub.add_parser(
        "reproduce", help="run a paper reproduction (without NAME, list them)",
        description="Run one paper reproduction: print its table and save its figures. "
                    "Without NAME, list the experiments.")
    p_rep.add_argument("name", nargs="?", metavar="NAME",
                       help="experiment name (omit to list them)")
    p_rep.add_argument("--out", default="figures", help="folder for figures (default: figures)")
    p_rep.add_argument("--quick", action="store_true",
                       help="a reduced run (the size the slow tests use)")
    p_rep.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p_budget = sub.add_parser(
        "budget", help="show a privacy ledger's budget and its charges",
        description="Show the budget stored in a privacy ledger (a SQLite file or a PostgreSQL "
                    "URL) and every charge recorded in it. A ledger that does not exist is an "
                    "error; nothing is created.")
    p_budget.add_argument("ledger", metavar="LEDGER",
                          help="path of a SQLite ledger file, or a postgresql:// URL")
    return parser, p_rep


def main(argv=None):
    """Run the command line; return the exit status (argparse exits with 2 on a usage error)."""
    parser, p_rep = _parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        demo(seed=args.seed)
    elif args.command == "reproduce":
        from . import experiments

        names = sorted(experiments.available())
        if args.name is None:
            print("\n".join(names) or "no experiments registered")
        elif args.name not in names:
            p_rep.error(f"unknown experiment {args.name!r}; choose from: {', '.join(names)}")
        else:
            try:
                experiments.run(args.name, out_dir=args.out, quick=args.quick, seed=args.seed)
            except ImportError as exc:  # an optional dependency (matplotlib) is missing
                print(f"python -m skhybrid reproduce: {exc}", file=sys.stderr)
                return 1
    elif args.command == "budget":
        from .accounting import LedgerUnavailableError

        try:
            budget(args.ledger)
        except (ValueError, LedgerUnavailableError) as exc:
            print(f"python -m skhybrid budget: {exc}", file=sys.stderr)
            return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
