"""The price of a search, before it runs."""

import copy
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import sklearn
from sklearn.base import clone, is_classifier
from sklearn.model_selection import (
    GridSearchCV,
    ParameterGrid,
    ParameterSampler,
    RandomizedSearchCV,
    check_cv,
)
from sklearn.utils.metadata_routing import process_routing

from ..accounting import POPULATIONS, BudgetExceededError, best_view, compose_events
from ..exceptions import PrivacyLeakWarning
from ._probe import (
    check_candidate_steps,
    check_private_steps,
    privacy_prefix,
    probe_events,
    structural_grid,
)
from ._scorers import _DPScorer, _PublicScorer, _takes_curator_mask
from ._search import PrivateSearchCV
from ..utils._sklearn_compat import num_samples, safe_indexing

__all__ = ["SearchCost", "search_cost"]


@dataclass
class SearchCost:
    """What a search would charge, as :func:`search_cost` returns it.

    ``str(cost)`` reads "this search costs (ε, δ) ...", followed by what no charge covers.

    Parameters
    ----------
    spent : dict
        ``{population: (epsilon, delta)}`` under the accountant's reporting rule.
    n_fits : int
        Fits that charge (folds × candidates, plus the refit).
    n_private_scores : int
        Charged DP scores.
    uncovered : list of str
        Releases no charge covers (scores of private rows in the clear, label-dependent
        splits, Pipeline steps fitted on private rows with no noise). Empty for a fully
        covered search.
    events : list of PrivacyEvent
        Every event the search would record before its refit (for :class:`PrivateSearchCV`,
        its one event, which covers the refit).
    refit_options : list of list of PrivacyEvent
        The events of the refit, one list per distinct candidate (the scores choose which
        is charged); empty when there is no separate refit. ``spent`` bounds the total
        under each option: the coordinate-wise maximum of their (ε, δ).
    """

    spent: dict
    n_fits: int
    n_private_scores: int
    uncovered: list = field(default_factory=list)
    events: list = field(default_factory=list, repr=False)
    refit_options: list = field(default_factory=list, repr=False)

    def scenarios(self):
        """Every event list the search may record: one per refit option.

        Returns
        -------
        scenarios : list of list of PrivacyEvent
            ``events`` followed by each refit option's events (``[events]`` without one).
        """
        return [self.events + refit for refit in self.refit_options] or [self.events]

    def __str__(self):
        eps, delta = self.spent["central"]
        what = (f"{self.n_fits} charged fits, {self.n_private_scores} charged scores"
                if self.n_fits or self.n_private_scores else
                "one charge covering every run, its scores and the refit")
        text = (f"this search costs (epsilon={eps:.6g}, delta={delta:.3g}) on the private rows "
                f"({what})")
        if self.uncovered:
            text += "; NOT covered: " + "; ".join(self.uncovered)
        return text


def search_cost(search, X, y, *, accountant=None, **fit_params):
    """Price a search before running it; refuse it up front if it does not fit a budget.

    For :class:`PrivateSearchCV` the price is its ``(epsilon, delta)``. For scikit-learn's
    ``GridSearchCV`` / ``RandomizedSearchCV`` over a skhybrid estimator, every fold of
    every candidate and the refit are probed for the events their fits would charge
    (nothing is trained), the charged scores of a :func:`dp_scorer` are added, and the
    events are composed as the accountant composes them. Releases that no charge covers
    are listed in ``uncovered``: scores of private rows by a plain scorer, and a
    label-dependent split (``StratifiedKFold``, the default ``cv`` for classifiers), whose
    fold membership depends on private labels.

    Parameters
    ----------
    search : PrivateSearchCV, GridSearchCV or RandomizedSearchCV
        The (unfitted) search.
    X : array-like of shape (n_samples, n_features)
        The rows it will be fitted on.
    y : array-like of shape (n_samples,)
        Labels or targets.
    accountant : PrivacyAccountant, default=None
        If given, raise :class:`~skhybrid.BudgetExceededError` when the search does not fit
        in its remaining budget (nothing is charged either way).
    **fit_params : dict
        The parameters the search's ``fit`` will get (masks).

    Returns
    -------
    cost : SearchCost
        ``str(cost)`` reads "this search costs (ε, δ) ...".

    Raises
    ------
    BudgetExceededError
        When ``accountant`` cannot pay for the search.
    """
    if isinstance(search, PrivateSearchCV):
        search._check_params()
        check_candidate_steps(search.estimator, search._candidate_space()[0],
                              privacy_prefix(search.estimator))
        events = [_private_search_event(search)]
        cost = _cost(events, n_fits=0, n_scores=0, uncovered=[])
    elif isinstance(search, (GridSearchCV, RandomizedSearchCV)):
        cost = _sklearn_search_cost(search, X, y, fit_params)
    else:
        raise ValueError("search must be a PrivateSearchCV, GridSearchCV or RandomizedSearchCV; "
                         f"got {type(search).__name__}.")
    if accountant is not None and not all(map(accountant.can_spend, cost.scenarios())):
        raise BudgetExceededError(
            f"The search does not fit in the remaining budget "
            f"{accountant.remaining('central')}: {cost}. Nothing was charged.")
    return cost


def _private_search_event(search):
    _, grid = search._candidate_space()
    return search._search_event(search._expected_runs(grid))[0]


def _candidates(search):
    """The candidates the search will fit, as it will draw them."""
    if hasattr(search, "param_grid"):
        return list(ParameterGrid(search.param_grid))
    random_state = search.random_state
    if random_state is None:
        raise ValueError(
            "search_cost cannot price a RandomizedSearchCV with random_state=None: the "
            "search draws its candidates afresh, so the priced ones would not be the ones "
            "fitted (and a sampled epsilon changes the charge). Pass an int random_state.")
    # A RandomState is advanced by sampling: sample from a copy, so the search draws the
    # same candidates after (if nothing else draws from it in between).
    return list(ParameterSampler(search.param_distributions, search.n_iter,
                                 random_state=copy.deepcopy(random_state)))


def _sklearn_search_cost(search, X, y, fit_params):
    estimator = search.estimator
    prefix = privacy_prefix(estimator)
    candidates = _candidates(search)
    if isinstance(search.cv, Iterator):
        raise ValueError(
            "search_cost cannot price a search whose cv is a one-shot iterator (a "
            "generator): pricing would consume it and the search would then fit nothing. "
            "Pass a CV splitter (KFold(shuffle=True), ShuffleSplit) or a list of "
            "(train, test) index pairs.")
    # y as given, as scikit-learn's search takes it (a list stays a list, each fit gets
    # its rows' entries): np.asarray would type every label by all of them, private ones
    # included, and the probes would then read another label set than the fits do.
    n = num_samples(y)
    cv = check_cv(search.cv, y, classifier=is_classifier(estimator))
    uncovered = []
    if "Stratified" in type(cv).__name__:  # StratifiedKFold, StratifiedShuffleSplit, ...
        uncovered.append(
            f"the folds of {type(cv).__name__} depend on the private labels; use "
            "KFold(shuffle=True) or ShuffleSplit, whose folds do not")
    uncovered += _steps_fitted_in_the_clear(search, estimator, prefix)
    splits = list(cv.split(X, y))
    # The estimator's fit gets what the search routes to it: with routing on, a mask meant
    # for the scorer alone (a mask-less NoisySGDClassifier scored by public_scorer) is not
    # a fit parameter.
    if sklearn.get_config()["enable_metadata_routing"]:
        fit_kwargs = process_routing(search, "fit", **fit_params).estimator.fit
    else:
        fit_kwargs = fit_params
    events, n_fits, refits = [], 0, []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyLeakWarning)
        for params in candidates:
            for train, _ in splits:
                events += _probe(estimator, prefix, params, X, y, train, fit_kwargs, n)
                n_fits += 1
        if search.refit is not False:
            # The refit's candidate is chosen by the scores: every candidate's refit is
            # priced (no one candidate need be dearest in both ε and δ).
            for params in candidates:
                refit = _probe(estimator, prefix, params, X, y, np.arange(n), fit_kwargs, n)
                if refit not in refits:
                    refits.append(refit)
            n_fits += 1
    # The probes' warnings, once each; a label set read from private labels is listed.
    label_set = False
    for category, message in dict.fromkeys((w.category, str(w.message)) for w in caught):
        if issubclass(category, PrivacyLeakWarning) and "label set" in message:
            label_set = True
        else:
            warnings.warn(message, category, stacklevel=3)
    if label_set:
        uncovered.append(
            f"{type(estimator).__name__}'s label set is read from private labels (classes_ "
            "and whether a fit succeeds depend on them); declare classes=[...]")
    scoring = search.scoring
    if isinstance(scoring, (list, tuple, set)):  # multi-metric by names
        scoring = {name: name for name in scoring}
    scorers = scoring if isinstance(scoring, dict) else {"score": scoring}
    n_scores = 0
    hybrid = _takes_curator_mask(estimator)
    routed = sklearn.get_config()["enable_metadata_routing"]
    for scorer in scorers.values():
        if hybrid and isinstance(scorer, _DPScorer) and not (
                routed and fit_params.get("curator_mask") is not None):
            raise ValueError(
                "dp_scorer would score a hybrid-model estimator's validation rows, local "
                "agents included, at the curator. Turn on metadata routing and pass "
                "curator_mask: only the curator's rows are then scored. Nothing was charged.")
        n_calls = len(candidates) * len(splits) * (2 if search.return_train_score else 1)
        if isinstance(scorer, _DPScorer):
            events += [scorer.event()] * n_calls
            n_scores += n_calls
        elif not isinstance(scorer, _PublicScorer):
            uncovered.append(
                f"{n_calls} fold scores by {scorer or 'the estimator score method'} read "
                "private validation rows in the clear (use public_scorer or dp_scorer)")
    return _cost(events, n_fits, n_scores, uncovered, refits)


def _steps_fitted_in_the_clear(search, estimator, prefix):
    """What PrivateSearchCV would refuse, as uncovered releases: Pipeline steps that the
    search fits on the private rows with no noise (a plain ``StandardScaler``, whose
    ``mean_`` best_estimator_ releases), in the template or in any candidate."""
    grid = getattr(search, "param_grid", None) or search.param_distributions
    grids = [grid] if isinstance(grid, Mapping) else list(grid)
    found = []
    for params in [{}, *structural_grid(grids)]:
        try:
            check_private_steps(clone(estimator).set_params(**params), prefix)
        except ValueError as exc:
            reason = str(exc).split(". ", 1)[0].replace(" of every run", "")
            if reason not in found:
                found.append(reason)
    return found


def _probe(estimator, prefix, params, X, y, rows, fit_params, n):
    routed = {key: (np.asarray(value)[rows] if np.ndim(value) == 1 and len(value) == n
                    else value) for key, value in fit_params.items()}
    X_rows = X.iloc[rows] if hasattr(X, "iloc") else X[rows]
    est = clone(estimator).set_params(**params)
    events = probe_events(est, prefix, X_rows, safe_indexing(y, rows), routed)
    if events is None:
        raise ValueError(f"{type(estimator).__name__} fitted without charging; its cost is "
                         "unknown.")
    return events


def _cost(events, n_fits, n_scores, uncovered, refit_options=()):
    cost = SearchCost({}, n_fits, n_scores, uncovered, events, list(refit_options))
    for population in POPULATIONS:
        totals = [best_view(compose_events(mine))[1] if mine else (0.0, 0.0)
                  for mine in ([e for e in scenario if e.population == population]
                               for scenario in cost.scenarios())]
        cost.spent[population] = (max(t[0] for t in totals), max(t[1] for t in totals))
    return cost
