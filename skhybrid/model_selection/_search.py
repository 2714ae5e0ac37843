"""PrivateSearchCV: a hyperparameter search whose whole release is covered by one charge."""

import contextlib
import copy
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from fractions import Fraction
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import sklearn
from joblib import Parallel, delayed
from joblib.parallel import get_active_backend
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.utils import check_array
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._base import forget_fit, warn_seed_reuse
from .._validation import check_delta, check_epsilon, check_generator, check_mask
from ..accounting import PrivacyAccountant, PrivacyEvent
from ..accounting._accountant import _relabel
from ._probe import (
    check_candidate_steps,
    check_private_steps,
    mask_fit_params,
    privacy_prefix,
    probe_events,
)
from ._scorers import check_metric, noisy_mean_score, row_scores
from ._selection import draw_number_of_runs, random_stopping_epsilon, run_epsilon_for_budget
from ..utils._sklearn_compat import get_tags

__all__ = ["PrivateSearchCV"]

_MASKS = ("public_mask", "curator_mask")


def _best_estimator_has(attr):
    """``available_if`` check: the selected model (or, before fit, the template) has ``attr``."""

    def check(self):
        getattr(self.best_estimator_ if hasattr(self, "best_estimator_") else self.estimator,
                attr)
        return True

    return check


class PrivateSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Private hyperparameter search by random stopping: one charge covers everything.

    The total budget (``epsilon``, ``delta``) is fixed before the search runs and charged
    once, before any row is read. The private rows are split once, at random and
    independently of the data, into training and validation rows. A *run* draws one
    candidate (uniformly from the grid, or from the distributions), fits it on the
    training rows and every public row with ``epsilon = run_epsilon_``, and scores it on
    the held-out private rows through the Laplace mechanism at the same ``run_epsilon_``
    (a replaced private row is in the training part or the validation part, never both,
    so a run is ``run_epsilon_``-DP, not twice that). The search runs
    K ~ Geometric(1/``n_iter``) times (K drawn exactly, independently of the data) and
    releases the best run only. That release is ``3 run_epsilon_``-DP (Liu & Talwar 2019,
    Thm 3.4); with ``delta > 0`` the Rényi analysis of Papernot & Steinke (2022, Thm 2)
    is used where it is smaller. ``run_epsilon_`` is derived from the total, never the
    other way round; the cost does not grow with ``n_iter``.

    Read more in the :ref:`User Guide <private_search>`.

    Parameters
    ----------
    estimator : estimator object
        A skhybrid estimator with ``epsilon`` and ``accountant`` parameters whose fit is
        pure ε-DP at ``delta=0`` for the central population (or a Pipeline whose private
        step is one, e.g. after a :class:`~skhybrid.PublicFitTransformer`). Estimators
        whose fits need ``delta > 0`` or spend local agents' budgets are refused before
        anything is charged, with the reason. So is a Pipeline with another step that
        would learn from the private rows without noise (a plain ``StandardScaler``):
        its other steps may only be ``PublicFitTransformer``, ``"passthrough"``/``None``
        or stateless row-wise transformers (``Normalizer``, a ``FunctionTransformer`` with
        an elementwise numpy ufunc: scikit-learn's ``requires_fit`` tag is False), and the
        private step may sit in nested Pipelines only. Every candidate of
        ``param_distributions`` is checked, not only the template.
    param_distributions : dict or list of dicts
        As in scikit-learn's ``GridSearchCV`` (lists of values: a grid, sampled uniformly)
        or ``RandomizedSearchCV`` (lists or scipy distributions with ``rvs``).
    epsilon : float
        Total ε of the search (> 0), every attribute included. ``np.inf`` runs the
        non-private baseline: every grid point (or ``n_iter`` sampled candidates), scored
        exactly.
    delta : float, default=0.0
        Total δ. ``0`` gives a pure-DP search.
    n_iter : int, default=None
        Expected number of runs m = E[K] (≥ 2). ``None``: twice the grid's size for a
        grid (capped at 200), 20 for distributions. Larger values try more candidates at
        no privacy cost, only time.
    metric : {"accuracy", "neg_mean_absolute_error"}, default=None
        The validation score; ``None`` picks accuracy for classifiers.
        ``"neg_mean_absolute_error"`` needs ``score_bound``.
    score_bound : float, default=None
        Public bound at which a row's absolute error is clipped (regressors).
    score_rows : {"private", "public"}, default="private"
        Which rows are held out and scored; the others all train. ``"private"`` scores
        held-out private rows through the Laplace mechanism and trains on every public
        row (public rows are usually few and worth more in training). ``"public"``
        scores held-out public rows exactly and trains on every private row.
    validation_size : float in (0, 1), default=0.25
        Share of the scored group held out for scoring.
    refit : bool, default=True
        Keep the selected run's model as ``best_estimator_`` (trained on the training
        rows). Unlike ``GridSearchCV``, it is not retrained on all rows: that would be a
        second release costing another fit.
    accountant : PrivacyAccountant, default=None
        Charged once, at the start of ``fit``. ``None`` uses the estimator's accountant,
        if any.
    n_jobs : int, default=None
        Runs in parallel (joblib). The candidates charge nothing themselves, so any
        ledger works. Under a thread-based joblib backend the runs take turns (each
        records its warnings in Python's process-wide warning state).
    random_state : int, RandomState, Generator or None, default=None
        Seeds the split, K, the candidates and every run's noise. ``None`` for releases:
        a seed (or a generator, which the search advances) is kept as this parameter and
        replays every draw, noise included, for whoever holds the fitted search.
    verbose : int, default=0
        Prints the search's public parameters and the selected candidate. No per-run
        progress: the number of runs must stay hidden. For the same reason every
        ``verbose`` parameter of ``estimator`` (and of its steps) is 0 while the runs fit;
        ``best_estimator_`` gets the template's values back.

    Attributes
    ----------
    best_params_ : dict
        The selected candidate's parameters.
    best_score_ : float
        Its noisy validation score (greater is better), clipped to the metric's range.
        It is the largest of K noisy scores, so it is optimistic (often exactly 1.0 for
        accuracy on an easy task): a selection score, not an estimate of the model's
        accuracy. For a number to report, score ``best_estimator_`` on held-out public
        rows (free) or with :func:`dp_scorer` (charged).
    best_estimator_ : estimator
        Its model (when ``refit=True``). Its ``random_state`` is the template's again
        (as ``clone`` gives it), not the generator that drew the run's noise, which
        would give that noise away. Its private step's ``privacy_spent_`` and
        ``privacy_events_`` are the search's: the model cost the whole search.
    cv_results_ : dict of lists
        One row, the selected candidate: ``params``, ``param_<name>``,
        ``mean_test_score``, ``rank_test_score``. The other runs' candidates, scores and
        their number are not released (the guarantee needs them hidden), except for
        ``epsilon=np.inf`` where every candidate is listed.
    run_epsilon_ : float
        ε of each run (its fit and, separately, its score).
    privacy_spent_ : dict
        ``{"central": (ε, δ), "local": (0, 0)}``: what the search charged.
    analysis_ : {"pure", "rdp", "nonprivate"}
        Which bound gave ``privacy_spent_``.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    skhybrid.model_selection.public_scorer : Free scores on public rows for sklearn's searches.
    skhybrid.model_selection.dp_scorer : Charged DP scores for sklearn's searches.
    skhybrid.model_selection.search_cost : What a search costs, before it runs.

    Notes
    -----
    A run whose fit fails closed with ``RuntimeError`` (an estimator that cannot certify
    its output, e.g. :class:`~skhybrid.DPLogisticRegression` at an extreme ``C``) scores
    ``-inf`` and is never selected; the search fails only if every run does.

    Warnings raised while a run fits and scores are held back; after the selection,
    only the selected run's are shown (another run's would tell of a run, and of K, that
    the guarantee hides). The probes that price the candidates before the charge show
    their warnings only when they refuse a candidate. A refusal repeats the estimator's
    reason with every quoted literal blanked: numpy's conversion errors quote the
    offending cell, which may be private.

    The time a search takes grows with K, which the guarantee hides: an observer who
    times the search learns about K (not about the data). The split, K and the
    candidates are drawn from ``random_state`` only.

    joblib prints no progress line for the runs, whatever ``joblib.parallel_config``
    says (and neither does a ``Parallel`` inside a run's fit on the calling thread). On
    a cluster (joblib's Dask or Ray backend) each run is a task: the scheduler, its
    dashboard and logs, and every client of the cluster see the runs and count K, as
    they see the data and the runs' models and scores. Run a private search on a
    cluster only when those are trusted with the private rows (see the docs page
    "Running on a cluster").

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skhybrid import DPLogisticRegression
    >>> from skhybrid.model_selection import PrivateSearchCV
    >>> X, y = make_classification(n_samples=2000, n_features=3, n_informative=2,
    ...                            n_redundant=0, random_state=0)
    >>> search = PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1, 10]},
    ...                          epsilon=1.0, random_state=0).fit(X, y)
    >>> search.privacy_spent_["central"]
    (1.0, 0.0)
    """

    def __init__(self, estimator, param_distributions, *, epsilon, delta=0.0, n_iter=None,
                 metric=None, score_bound=None, score_rows="private", validation_size=0.25,
                 refit=True, accountant=None, n_jobs=None, random_state=None, verbose=0):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.epsilon = epsilon
        self.delta = delta
        self.n_iter = n_iter
        self.metric = metric
        self.score_bound = score_bound
        self.score_rows = score_rows
        self.validation_size = validation_size
        self.refit = refit
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        check_epsilon(self.epsilon, "epsilon", allow_inf=True)
        check_delta(self.delta, "delta")
        if self.accountant is not None and not isinstance(self.accountant, PrivacyAccountant):
            raise ValueError("accountant must be None or a skhybrid PrivacyAccountant; got "
                             f"{type(self.accountant).__name__}.")
        if self.score_rows not in ("private", "public"):
            raise ValueError("score_rows must be 'private' or 'public'; got "
                             f"{self.score_rows!r}.")
        if not (isinstance(self.validation_size, Real) and 0 < self.validation_size < 1):
            raise ValueError("validation_size must be a float in (0, 1); got "
                             f"{self.validation_size!r}.")
        if self.n_iter is not None and not (
                isinstance(self.n_iter, Integral) and not isinstance(self.n_iter, bool)
                and self.n_iter >= 2):
            raise ValueError(f"n_iter must be an integer >= 2 or None; got {self.n_iter!r}.")
        if self.n_jobs is not None and not (
                isinstance(self.n_jobs, Integral) and not isinstance(self.n_jobs, bool)
                and self.n_jobs != 0):
            # (joblib refuses 0 too, but only after the charge)
            raise ValueError("n_jobs must be None or a nonzero integer (-1: all cores); got "
                             f"{self.n_jobs!r}.")
        if not hasattr(self.estimator, "predict"):
            raise ValueError(f"{type(self.estimator).__name__} has no predict method: "
                             "PrivateSearchCV selects among predictors by their validation "
                             "score.")
        metric = self.metric
        if metric is None:
            if not is_classifier(self.estimator):
                raise ValueError("metric=None picks accuracy, which needs a classifier; for a "
                                 "regressor set metric='neg_mean_absolute_error' and score_bound.")
            metric = "accuracy"
        bound = check_metric(metric, self.score_bound, self.estimator)
        check_private_steps(self.estimator, privacy_prefix(self.estimator))
        return metric, bound

    def _candidate_space(self):
        dists = self.param_distributions
        if isinstance(dists, Mapping):
            dists = [dists]
        if not (isinstance(dists, Sequence) and dists
                and all(isinstance(d, Mapping) and d for d in dists)):
            raise ValueError("param_distributions must be a non-empty dict or list of non-empty "
                             f"dicts; got {self.param_distributions!r}.")
        is_grid = all(isinstance(v, Sequence) and not isinstance(v, str)
                      for d in dists for v in d.values())
        if is_grid:
            grid = ParameterGrid(dists)
            if len(grid) == 0:
                raise ValueError("param_distributions has an empty list of values: the grid "
                                 "has no candidate.")
        else:
            grid = None
        reserved = {"epsilon", "delta", "accountant", "random_state"}
        tuned = {key.rsplit("__", 1)[-1] for d in dists for key in d}
        if tuned & reserved:
            raise ValueError(
                f"param_distributions sets {sorted(tuned & reserved)}, which the search sets "
                "itself (each run's budget and noise). Remove them.")
        return dists, grid

    # ---------------------------------------------------------------------- fit
    def fit(self, X, y, *, public_mask=None, curator_mask=None):
        """Charge the search's budget, run it, release the best run.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (public and private).
        y : array-like of shape (n_samples,)
            Labels or targets.
        public_mask : array-like of bool, default=None
            Public rows, for estimators that take one (routed to them as usual).
        curator_mask : array-like of bool, default=None
            Curator rows, for hybrid-model estimators. Rows outside it are local agents,
            whose messages from every run would be seen: such fits are refused.

        Returns
        -------
        self : object
            The fitted search.
        """
        forget_fit(self)  # a refused or refit=False search keeps nothing of the last one
        metric, bound = self._check_params()
        prefix = privacy_prefix(self.estimator)
        dists, grid = self._candidate_space()
        check_candidate_steps(self.estimator, dists, prefix)
        if y is None:
            raise ValueError("PrivateSearchCV requires y to be passed, but the target y is None.")
        sparse_ok = self.estimator.__sklearn_tags__().input_tags.sparse
        if isinstance(X, (list, tuple)):
            # To float64 cell by cell: check_array would pick one dtype from all the rows,
            # so one row's type (Python floats among float32 rows) decided every row's,
            # and with it the runs' arithmetic (red team 16).
            try:
                X = np.asarray(X, dtype=np.float64)
            except (ValueError, TypeError, OverflowError):
                raise ValueError(
                    "PrivateSearchCV takes a list X only when it converts to float64 cell "
                    "by cell; pass other data as a numpy array, a sparse matrix or a "
                    "DataFrame (a list's rows would be converted together, so one row's "
                    "type would decide how the others are read). Nothing was charged."
                ) from None
        # The estimator alone (no step before it that could impute) and without NaN
        # support: its predict would refuse a held-out row with NaN after the charge, so
        # every row is checked now. (In a Pipeline the probes refuse such training rows,
        # and such a held-out row scores as the worst: see row_scores.)
        finite = prefix == "" and not get_tags(self.estimator).input_tags.allow_nan
        try:
            X_checked = check_array(X, accept_sparse=sparse_ok, ensure_all_finite=finite,
                                    dtype=None)
        except ValueError as exc:
            if not finite or not re.search("NaN|infinity", str(exc)):
                raise
            raise ValueError(
                f"{exc} {type(self.estimator).__name__} cannot take them; PrivateSearchCV "
                "checks every row before anything is charged. Impute or drop them (e.g. a "
                "Pipeline that starts with sklearn.impute.SimpleImputer). Nothing was "
                "charged.") from None
        if not hasattr(X, "iloc") and not sp.issparse(X):
            X = X_checked  # lists and array-likes become arrays the runs can index
        n = X_checked.shape[0]
        y, as_list = _vector(y)
        if y.shape[0] != n:
            raise ValueError(f"X has {n} rows but y has {y.shape[0]}.")
        index = getattr(X, "index", None)
        masks = {name: check_mask(m, n, name, index=index)
                 for name, m in (("public_mask", public_mask), ("curator_mask", curator_mask))
                 if m is not None}
        if len(masks) > 1:
            raise ValueError("Pass public_mask or curator_mask, not both.")
        public = masks.get("public_mask", np.zeros(n, dtype=bool))
        rng = check_generator(self.random_state)
        nonprivate = math.isinf(self.epsilon)

        m = self._expected_runs(grid)
        event, run_epsilon, analysis = self._search_event(m)
        if nonprivate:
            candidates = (list(grid) if grid is not None else list(ParameterSampler(
                dists, m, random_state=_seed(rng))))
        else:
            k = draw_number_of_runs(rng, m)
            candidates = (
                [grid[i] for i in rng.integers(len(grid), size=k)] if grid is not None
                else list(ParameterSampler(dists, k, random_state=_seed(rng))))
        scored = public if self.score_rows == "public" else ~public
        val = self._split(scored, rng)
        train = ~val
        if not val.any():
            raise ValueError(
                f"score_rows={self.score_rows!r} needs held-out {self.score_rows} rows, and "
                f"validation_size={self.validation_size} of the {int(scored.sum())} "
                f"{self.score_rows} rows (n_samples={n}) is none. Use more rows, a larger "
                "validation_size or score_rows="
                f"{'private' if self.score_rows == 'public' else 'public'!r}.")
        if not train.any():
            raise ValueError("The split left no training row: use a smaller validation_size.")

        fit_params = {}
        for name, mask in masks.items():
            fit_params.update(mask_fit_params(self.estimator, name, mask[train],
                                              sklearn.get_config()["enable_metadata_routing"]))
        # A list y reaches the runs as a list, as a bare fit would get it: each run reads
        # the public rows' label set from their entries (see _vector).
        X_train, y_train = _take(X, train), (y[train].tolist() if as_list else y[train])
        template = self.estimator.get_params(deep=True)
        settings = {prefix + "epsilon": run_epsilon}
        if prefix + "delta" in template:
            settings[prefix + "delta"] = 0.0
        # Every step runs silent: a line printed per run (or per probe) would count the
        # runs, and K must stay hidden. The released model gets the template's values back.
        quiet = _quiet(template)
        settings.update(quiet)
        restore = {key: template[key] for key in quiet}
        restore[prefix + "random_state"] = template.get(prefix + "random_state")
        # Price every run before charging: a refusal costs nothing. The probes' warnings are
        # dropped (how many there are would count the distinct candidates drawn); the
        # selected run's fit raises its own again, and those are shown.
        for params in _unique(candidates):
            est = clone(self.estimator).set_params(**{**params, **settings})
            with _recording() as caught:
                try:
                    events = probe_events(est, prefix, X_train, y_train, fit_params)
                    failure = None
                except ValueError as exc:
                    failure = exc
            if failure is not None:
                _warn_again(caught)
                # Neither chained nor copied as is: numpy's and Python's conversion errors
                # quote the offending cell, which may be a private one.
                reason = _unquoted(failure)
                if "delta" in reason:  # an (ε, δ) learner: not the user's delta at fault
                    reason += (
                        " Each run of PrivateSearchCV is a pure epsilon-DP step (delta=0; "
                        "the search's delta is for its selection), so an estimator that "
                        "needs delta > 0 cannot be one: tune it with scikit-learn's "
                        "GridSearchCV and skhybrid.model_selection.public_scorer or "
                        "dp_scorer (user guide, Private hyperparameter tuning).")
                if "Nothing was charged" not in reason:
                    reason += " Nothing was charged."
                raise ValueError(
                    f"{type(self.estimator).__name__} with {params} cannot run as one step of "
                    f"the search (epsilon={settings[prefix + 'epsilon']:.4g}, delta=0): "
                    f"{reason}") from None
            try:
                self._check_run_events(events, settings[prefix + "epsilon"], params)
            except ValueError:
                _warn_again(caught)
                raise

        accountant = self.accountant
        if accountant is None:
            accountant = self.estimator.get_params().get(prefix + "accountant")
        # The runs are fitted without an accountant (the search's event covers them); the
        # released model gets it back, so that refitting it (or a clone) is charged.
        restore[prefix + "accountant"] = accountant
        if accountant is not None:
            accountant.spend([event], source=type(self).__name__)
            seeded = self.random_state is not None
            if seeded and not nonprivate and accountant.budget("central")[0] < math.inf:
                warn_seed_reuse(
                    "PrivateSearchCV", self.random_state, accountant,
                    f"PrivateSearchCV: random_state={self.random_state!r} fixes the split, "
                    "the number of runs and every run's noise while the accountant's budget "
                    "is finite. The search keeps it (get_params, pickle), so whoever holds "
                    "the fitted search can replay them (a generator can be stepped back to "
                    "before the search), and a second search with one seed on neighbouring "
                    "data differs by exactly what differs in the data. Use "
                    "random_state=None for releases; seeds and generators are for tests "
                    "and reproductions.", stacklevel=2)
        self.run_epsilon_, self.analysis_ = run_epsilon, analysis
        self.privacy_spent_ = {"central": (event.epsilon, event.delta), "local": (0.0, 0.0)}
        if self.verbose:
            print(f"[PrivateSearchCV] charged {self.privacy_spent_['central']}; "
                  + ("every candidate scored exactly" if nonprivate else
                     f"expected runs {m}, run epsilon {run_epsilon:.4g}"))

        # Every run's randomness comes from the search's generator, so random_state
        # reproduces the search; each run gets its own stream.
        seeds = np.random.SeedSequence(int(rng.integers(2**63))).spawn(len(candidates))
        X_val, y_val, val_private = _take(X, val), y[val], ~public[val]
        # verbose=0 explicitly: joblib's progress lines ("Done 6 out of 6") count the runs,
        # and an argument left out is taken from the caller's parallel_config; the config
        # also silences a Parallel inside a run's fit (PPM's n_jobs) on this thread.
        with _silent_joblib():
            runs = Parallel(n_jobs=_runs_n_jobs(self.n_jobs), verbose=0)(
                delayed(_run)(self.estimator, params, settings, prefix, X_train, y_train,
                              fit_params, X_val, y_val, val_private, metric, bound,
                              np.random.default_rng(seed), restore)
                for params, seed in zip(candidates, seeds))
        best = int(np.argmax([score for _, score, _ in runs]))
        if runs[best][0] is None:
            raise RuntimeError(
                "Every run of the search failed closed (its estimator refused to release a "
                "model); the charge stands. Check the estimator's parameters alone first.")
        self.best_params_ = candidates[best]
        self.best_score_ = runs[best][1]
        if self.refit:
            self.best_estimator_ = runs[best][0]
            # The released model cost the whole search, not its own run's ε: it says so.
            step = (self.best_estimator_ if not prefix
                    else self.best_estimator_.get_params()[prefix[:-len("__")]])
            step.privacy_spent_ = dict(self.privacy_spent_)
            step.privacy_events_ = [_relabel(event, type(self).__name__)]
        shown = range(len(runs)) if nonprivate else [best]
        # Only released runs speak: a warning from another run would tell of a run (and of
        # K) the guarantee hides.
        for i in shown:
            _warn_again(runs[i][2])
        self.cv_results_ = _results([candidates[i] for i in shown],
                                    [runs[i][1] for i in shown])
        self.n_features_in_ = X_checked.shape[1]
        if hasattr(X, "columns"):
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        if self.verbose:
            # No elapsed time: it grows with K.
            print(f"[PrivateSearchCV] selected {self.best_params_} (score "
                  f"{self.best_score_:.4g})")
        return self

    def _expected_runs(self, grid):
        """m = E[K]: ``n_iter``, else twice the grid (at most 200), else 20."""
        return self.n_iter or (min(2 * len(grid), 200) if grid is not None else 20)

    def _search_event(self, m):
        """The one event the search charges, with its per-run ε and the analysis used."""
        if math.isinf(self.epsilon):
            return (PrivacyEvent("random-stopping-search", "nonprivate", math.inf),
                    math.inf, "nonprivate")
        run_epsilon = run_epsilon_for_budget(self.epsilon, self.delta, m)
        total, analysis = random_stopping_epsilon(run_epsilon, self.delta, m)
        params = {"run_epsilon": run_epsilon, "expected_runs": m}
        delta = 0.0 if analysis == "pure" else self.delta
        kind = "pure" if analysis == "pure" else "approx"
        return (PrivacyEvent("random-stopping-search", kind, total, delta, params=params),
                run_epsilon, analysis)

    def _split(self, scored, rng):
        """Hold out ``validation_size`` of the scored rows, at random (data-independent)."""
        group = np.flatnonzero(scored)
        val = np.zeros(scored.shape[0], dtype=bool)
        val[rng.permutation(group)[:int(round(self.validation_size * group.size))]] = True
        return val

    def _check_run_events(self, events, run_epsilon, params):
        name = type(self.estimator).__name__
        if events is None:
            raise ValueError(f"{name} fitted without charging its accountant, so its privacy "
                             "cannot be checked; it cannot be tuned by PrivateSearchCV.")
        if math.isinf(run_epsilon):
            return
        if any(e.population != "central" for e in events):
            raise ValueError(
                f"{name} with {params} spends local agents' budgets: every run's messages "
                "would be seen, not only the selected one's, so random stopping does not "
                "cover them. Tune it on public rows (public_scorer) or with all rows at the "
                "curator.")
        if any(e.kind != "pure" for e in events):
            raise ValueError(
                f"{name} with {params} is not pure epsilon-DP at delta=0 (its fit charges "
                f"{sorted({e.kind for e in events})} events); PrivateSearchCV's selection "
                "theorems need pure runs. Tune it on public rows with public_scorer, or pay "
                "for every fit with dp_scorer in GridSearchCV (see search_cost).")
        # exactly: a run charging a hair more than ε_run is outside the search's bound
        spent = sum(Fraction(float(e.epsilon)) * int(e.count) for e in events)
        if spent > Fraction(float(run_epsilon)):
            spent = float(spent)
            raise ValueError(
                f"{name} with {params} charges epsilon={spent:.6g} when asked for "
                f"{run_epsilon:.6g}; PrivateSearchCV cannot bound its runs.")

    # ------------------------------------------------------------- delegation
    def _check_refit(self, method):
        check_is_fitted(self, "best_params_")
        if not self.refit:
            raise AttributeError(f"{method} needs refit=True (best_estimator_).")

    def predict(self, X):
        """Predict with the selected model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions of ``best_estimator_``.
        """
        self._check_refit("predict")
        return self.best_estimator_.predict(X)

    @available_if(_best_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the selected model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            ``best_estimator_.predict_proba(X)``.
        """
        self._check_refit("predict_proba")
        return self.best_estimator_.predict_proba(X)

    @available_if(_best_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log class probabilities of the selected model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            ``best_estimator_.predict_log_proba(X)``.
        """
        self._check_refit("predict_log_proba")
        return self.best_estimator_.predict_log_proba(X)

    @available_if(_best_estimator_has("decision_function"))
    def decision_function(self, X):
        """Decision values of the selected model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``best_estimator_.decision_function(X)``.
        """
        self._check_refit("decision_function")
        return self.best_estimator_.decision_function(X)

    def score(self, X, y, sample_weight=None):
        """Score of the selected model on ``(X, y)`` (a release if those rows are private).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.
        y : array-like of shape (n_samples,)
            Their labels or targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Passed on to ``best_estimator_.score`` when given.

        Returns
        -------
        score : float
            ``best_estimator_.score(X, y)``.
        """
        self._check_refit("score")
        if sample_weight is None:
            return self.best_estimator_.score(X, y)
        return self.best_estimator_.score(X, y, sample_weight=sample_weight)

    @property
    def classes_(self):
        """Class labels of the selected classifier."""
        self._check_refit("classes_")
        return self.best_estimator_.classes_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.estimator.__sklearn_tags__()
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = copy.deepcopy(inner.classifier_tags)
        tags.regressor_tags = copy.deepcopy(inner.regressor_tags)
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.target_tags.required = True
        return tags


def _runs_n_jobs(n_jobs):
    """``n_jobs`` for the runs: 1 (one after the other) under a thread-based joblib
    backend, whose runs would record their warnings in one process-wide state at once.

    (A lock around each run instead deadlocked: a run's fit may start a nested joblib
    ``Parallel``, e.g. scikit-learn's ``LogisticRegression`` on a Dask worker, whose tasks
    then waited behind runs waiting for the lock.)
    """
    backend, _ = get_active_backend()
    return 1 if getattr(backend, "uses_threads", False) else n_jobs


def _silent_joblib():
    """``joblib.parallel_config(verbose=0)``: the caller's backend, no progress lines.
    joblib < 1.3 has no configuration that sets a verbosity, so nothing to undo there."""
    try:
        from joblib import parallel_config
    except ImportError:  # pragma: no cover - joblib < 1.3
        return contextlib.nullcontext()
    return parallel_config(verbose=0)


def _seed(rng):
    return int(rng.integers(2**31 - 1))


def _unique(candidates):
    seen, out = set(), []
    for params in candidates:
        key = repr(sorted(params.items()))
        if key not in seen:
            seen.add(key)
            out.append(params)
    return out


def _vector(y):
    """``y`` as a vector the search can split, and whether it was a list (or tuple).

    A list is read label by label into an object array (each run gets its rows back as a
    list): converted whole, it takes one dtype from every label, private ones included, so
    one private ``1.0`` among ints made the selected model's ``classes_`` floats, and a
    private ``"1"`` made them strings where a bare fit refuses that label (red team 22).
    A list of one-label rows is a column, as for ``column_or_1d``. Arrays and pandas
    columns keep the caller's dtype.
    """
    if not isinstance(y, (list, tuple)):
        return column_or_1d(y, warn=True), False
    if any(isinstance(label, (list, tuple, np.ndarray)) and np.ndim(label) for label in y):
        if not all(np.ndim(label) == 1 and len(label) == 1 for label in y):
            raise ValueError("y should be a 1d array or a column; got a list whose entries "
                             "are not all labels or one-label rows.")
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please "
                      "change the shape of y to (n_samples, ), for example using ravel().",
                      DataConversionWarning, stacklevel=3)
        y = [label[0] for label in y]
    return np.fromiter(y, dtype=object, count=len(y)), True


def _take(X, rows):
    if hasattr(X, "iloc"):
        return X.iloc[np.flatnonzero(rows)]
    return X[rows]


def _run(estimator, params, settings, prefix, X_train, y_train, fit_params, X_val, y_val,
         val_private, metric, bound, rng, restore):
    """One base run: fit the candidate on the training rows, score it on the held-out rows.

    ``rng`` draws the fit's noise and the score's; once both are drawn, the model's
    parameters in ``restore`` (its ``random_state``) are set back to the template's values,
    as ``clone`` gives them. A model that kept ``rng`` would publish the noise: PCG64 can be
    stepped backwards, so its final state gives every draw, the score's Laplace noise
    included.
    """
    est = clone(estimator).set_params(**{**params, **settings, prefix + "accountant": None,
                                         prefix + "random_state": rng})
    with _recording() as caught:
        try:
            est.fit(X_train, y_train, **fit_params)
        except RuntimeError:
            # A fit that fails closed (e.g. an optimiser that cannot certify its minimiser)
            # releases nothing; the run loses the selection instead of ending the search.
            return None, -np.inf, []
        scores = row_scores(est, X_val, y_val, metric, bound)
        score = noisy_mean_score(scores, val_private, metric, bound,
                                 settings[prefix + "epsilon"], rng)
    # numpy's floating-point warnings (a stateless step's log of a negative value, an
    # overflow) come from the private rows' values; the estimators' own are public.
    return _released(est, restore), score, [
        (category, message) for category, message in caught
        if not issubclass(category, RuntimeWarning)]


def _unquoted(exc):
    """``exc``'s message with every quoted literal blanked: the search repeats an
    estimator's reason without the value a conversion error quotes (``could not convert
    string to float: '...'``)."""
    return _QUOTED.sub(r"\1\2...\2", str(exc))


_QUOTED = re.compile(r"""(b?)(['"])(?:(?!\2).)*\2""")


def _quiet(params):
    """The silent value of every ``verbose`` parameter in ``params`` (a deep get_params)."""
    return {key: False if isinstance(value, (bool, np.bool_)) else 0
            for key, value in params.items() if key == "verbose" or key.endswith("__verbose")}


@contextlib.contextmanager
def _recording():
    """Catch every warning raised inside (none escapes); yields a list that holds them,
    as (category, message) pairs that pickle across joblib's workers, on exit.

    ``warnings.catch_warnings`` swaps process-wide state, so two runs recording at once
    in threads lost or swapped their warnings, and how many reached the caller depended
    on K (red team 14): the runs do not run in threads of one process under joblib's
    threading backend (see :func:`_runs_n_jobs`; a Dask worker's threads are the
    caller's to avoid, see the privacy model). numpy's floating-point errors are ignored inside, whatever
    ``np.seterr`` the caller set: its ``call``, ``print`` and ``raise`` modes are not
    warnings, and would report a private row's underflow once per probe and run (red
    team 15).
    """
    recorded = []
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        try:
            yield recorded
        finally:
            recorded.extend((w.category, str(w.message)) for w in caught)


def _warn_again(recorded):
    """Re-emit recorded warnings; the user's filters apply as usual."""
    for category, message in recorded:
        warnings.warn(message, category, stacklevel=3)


def _released(est, restore):
    """``est`` with the parameters in ``restore`` set back (copied as ``clone`` copies; an
    accountant is shared, as ``clone`` shares it: a copy would not record the charges)."""
    return est.set_params(**{
        key: value if isinstance(value, PrivacyAccountant) else clone(value, safe=False)
        for key, value in restore.items()})


def _results(candidates, scores):
    scores = np.asarray(scores, dtype=float)
    order = np.argsort(-scores, kind="stable")
    rank = np.empty(len(scores), dtype=np.int32)
    rank[order] = np.arange(1, len(scores) + 1)
    results = {"params": list(candidates), "mean_test_score": scores, "rank_test_score": rank}
    for name in sorted({key for params in candidates for key in params}):
        results[f"param_{name}"] = np.ma.MaskedArray(
            [params.get(name) for params in candidates],
            mask=[name not in params for params in candidates], dtype=object)
    return results
