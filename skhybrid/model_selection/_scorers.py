"""Scores that a search may release: exact on public rows, noisy on private rows.

A score computed on private validation rows is a release, not post-processing of the
fit. The scores here are sums of a bounded per-row score (a 0/1 hit for ``"accuracy"``,
an absolute error clipped at ``score_bound`` for ``"neg_mean_absolute_error"``): one
replaced private row moves the private sum by at most the bound, so the Laplace
mechanism on the lattice (Dwork et al. 2006, Thm 1; exact noise: Canonne, Kamath &
Steinke 2020, Alg. 2) makes the private part ε-DP, and adding the public part and
dividing by the public number of rows is post-processing.
"""

import inspect
import math
import warnings
from numbers import Real

import numpy as np
from sklearn.base import is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils.metadata_routing import MetadataRequest

from .._base import warn_seed_reuse
from .._validation import check_epsilon, check_generator, check_mask
from ..accounting import PrivacyAccountant
from ..exceptions import PrivacyLeakWarning
from ..mechanisms import LaplaceMechanism
from ..utils._rows import predict_silently
from ._probe import _batch_function

__all__ = ["public_scorer", "dp_scorer", "METRICS"]

#: Metrics with a bounded per-row score, and the sign that makes greater better.
METRICS = {"accuracy": 1.0, "neg_mean_absolute_error": -1.0}


def check_metric(metric, score_bound, estimator=None):
    """Validate ``metric`` and its per-row bound; returns the bound."""
    if metric not in METRICS:
        raise ValueError(
            f"metric must be one of {sorted(METRICS)}; got {metric!r}. Private scores need "
            "a per-row score with a public bound."
        )
    if metric == "accuracy":
        if estimator is not None and not is_classifier(estimator):
            raise ValueError("metric='accuracy' needs a classifier; use "
                             "metric='neg_mean_absolute_error' with score_bound for a regressor.")
        return 1.0
    if not (isinstance(score_bound, Real) and math.isfinite(score_bound) and score_bound > 0):
        raise ValueError(
            "metric='neg_mean_absolute_error' needs score_bound, a public bound (> 0) at "
            f"which each row's absolute error is clipped; got score_bound={score_bound!r}."
        )
    return float(score_bound)


def row_scores(estimator, X, y, metric, bound, *, private=True):
    """Per-row scores in [0, bound]: hits (accuracy) or clipped absolute errors.

    Total over the rows: each row's score depends on that row alone, so the sum changes
    by at most ``bound`` between neighbours, whatever the rows hold (the scores are
    released after their charge, so nothing here may raise for one row's sake).
    ``private=False`` (public rows only) runs ``predict`` once and raises its refusal,
    as scikit-learn's scorers do.

    - A row that ``estimator.predict`` refuses on its own (NaN or infinity, also after a
      public transformer overflowed it, a category no public row shows, a cell that
      does not convert) scores as the worst: 0 hits, error ``bound``. The rows are
      predicted together, and only when that fails are they split in halves until the
      refused rows stand alone (O(f log n) calls for f refused rows).
    - A label or prediction that is NaN or does not convert to a float scores ``bound``
      (MAE); a comparison that fails counts as a miss (accuracy).
    - Warnings while predicting are not shown: the rows may be private, and a warning
      that fires for one of them (a category its public fit never saw, an overflow)
      would tell the data set from its neighbour outside the score's charge.
    """
    # List labels are read one by one: np.asarray picks one dtype from all labels, so one
    # label "1" made every label a string and every row a miss, a score that moved by
    # n·bound for one changed row (red team 15). (A list X, whose rows predict converts
    # together, is refused by dp_scorer and converted cell by cell by PrivateSearchCV.)
    y = _labels(y)
    n = y.shape[0]
    if private:
        pred, ok = _predict_rows(estimator, X, n)
    else:
        pred, ok = _checked(predict_silently(estimator, X), n), np.ones(n, dtype=bool)
    if metric == "accuracy":
        hits = np.zeros(n, dtype=np.int64)
        hits[ok] = _equal(pred, y[ok])
        return hits
    errors = np.full(n, float(bound))
    with np.errstate(invalid="ignore", over="ignore"):
        # fmin: a NaN error scores as the bound (np.minimum kept NaN, and the Laplace
        # mechanism refused the sum after the charge)
        errors[ok] = np.fmin(np.abs(_floats(pred) - _floats(y[ok])), bound)
    return errors


def _predict_rows(estimator, X, n):
    """(predictions of the rows ``predict`` takes, in order; mask of those rows)."""
    ok = np.ones(n, dtype=bool)
    try:
        return _checked(predict_silently(estimator, X), n), ok
    except Exception:  # noqa: BLE001 - any refusal: find the rows that cause it
        pass
    done, stack = [], [np.arange(n)]
    while stack:
        idx = stack.pop()
        try:
            done.append((idx, _checked(predict_silently(estimator, _rows(X, idx)), idx.size)))
        except Exception:  # noqa: BLE001
            if idx.size == 1:
                ok[idx] = False
            else:
                half = idx.size // 2
                stack += [idx[half:], idx[:half]]
    if not done:
        return np.empty(0), ok
    order = np.argsort(np.concatenate([idx for idx, _ in done]), kind="stable")
    return np.concatenate([p for _, p in done])[order], ok


def _labels(y):
    """``y`` as an array: arrays and pandas columns as they are (one column of shape
    (n, 1) as a vector), a list label by label, each as given (an object array:
    ``np.asarray`` picks one dtype from all labels, so one label ``"1"`` made every
    label a string; a tuple label stays one label)."""
    if isinstance(y, np.ndarray) or hasattr(y, "to_numpy"):
        out = np.asarray(y)
        return out[:, 0] if out.ndim == 2 and out.shape[1] == 1 else out
    return np.fromiter(y, dtype=object, count=len(y))


def _checked(pred, n):
    pred = np.asarray(pred)
    if pred.ndim == 0 or pred.shape[0] != n:
        raise ValueError("predict returned the wrong number of predictions")
    return pred


def _floats(values):
    """``values`` as floats; an entry that does not convert (or is complex: numpy would
    drop its imaginary part with a warning) becomes NaN."""
    values = np.asarray(values)
    if values.dtype.kind in "biuf":
        return values.astype(float)
    return np.frompyfunc(_float_or_nan, 1, 1)(values).astype(float)


def _float_or_nan(value):
    if isinstance(value, (complex, np.complexfloating)):
        return math.nan
    try:
        return float(value)
    except (ValueError, TypeError, OverflowError):
        return math.nan


def _equal(pred, y):
    """``pred == y`` per row; a comparison that fails (pd.NA) is False."""
    try:
        return np.asarray(pred == y, dtype=bool)
    except (ValueError, TypeError):
        return np.frompyfunc(_equal_or_false, 2, 1)(pred, y).astype(bool)


def _equal_or_false(a, b):
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False


def noisy_mean_score(scores, private, metric, bound, epsilon, rng):
    """The score over all rows, with the private rows' sum released by the Laplace
    mechanism at ``epsilon`` (``epsilon=np.inf``: exact).

    The noisy sum is clipped to its range ``[0, bound · n_private]`` (public bounds:
    post-processing), so the score stays a possible score (an accuracy in [0, 1]).
    """
    private = np.asarray(private, dtype=bool)
    total = scores[~private].sum()
    if private.any():
        private_sum = scores[private].sum()
        if math.isinf(epsilon):
            total = total + private_sum
        else:
            noisy = float(LaplaceMechanism(epsilon, bound)(private_sum, rng))
            total = total + min(max(noisy, 0.0), bound * int(private.sum()))
    return METRICS[metric] * float(total) / scores.size


class _RowScorer:
    """A scikit-learn scorer ``scorer(estimator, X, y, public_mask=...)``.

    With ``sklearn.set_config(enable_metadata_routing=True)`` a search or
    ``cross_validate`` routes each validation fold's part of ``public_mask`` here.
    """

    def __init__(self, metric, score_bound):
        self.metric = metric
        self.score_bound = score_bound

    def get_metadata_routing(self):
        request = MetadataRequest(owner=type(self).__name__)
        request.score.add_request(param="public_mask", alias=True)
        request.score.add_request(param="curator_mask", alias=True)
        return request

    def _mask(self, public_mask, X, n_rows):
        if public_mask is None:
            raise ValueError(
                f"{type(self).__name__[1:]} needs the validation fold's public_mask. Turn on "
                "scikit-learn's metadata routing (sklearn.set_config(enable_metadata_routing="
                "True)) and pass public_mask to the search's or cross_validate's fit."
            )
        # (a pandas Series mask is aligned to the fold's index, as the estimators do)
        return check_mask(public_mask, n_rows, "public_mask", index=getattr(X, "index", None))


def _takes_curator_mask(estimator):
    """Whether the estimator (or a Pipeline step, or any estimator inside) is fitted with
    a ``curator_mask``: a hybrid-model learner, whose rows outside it are local agents."""
    inner = [estimator, *estimator.get_params(deep=True).values()] \
        if hasattr(estimator, "get_params") else [estimator]
    for est in inner:
        fit = getattr(est, "fit", None)
        if callable(fit) and not isinstance(est, type):
            try:
                if "curator_mask" in inspect.signature(fit).parameters:
                    return True
            except (TypeError, ValueError):  # pragma: no cover - builtins without signature
                continue
    return False


def _curator_rows(estimator, curator_mask, X, n_rows, scorer):
    """The rows a scorer may read at the curator: all, or the curator's rows of a
    hybrid-model estimator (local agents answer only through their randomizers)."""
    if curator_mask is None:
        if _takes_curator_mask(estimator):
            raise ValueError(
                f"{scorer} scores a hybrid-model estimator, whose validation rows include "
                "local agents that the curator must never read. Turn on metadata routing "
                "and pass curator_mask to the search's (or cross_validate's) fit: only the "
                "curator's rows are scored.")
        return np.ones(n_rows, dtype=bool)
    return check_mask(curator_mask, n_rows, "curator_mask", index=getattr(X, "index", None))


class _PublicScorer(_RowScorer):
    def __call__(self, estimator, X, y, public_mask=None, curator_mask=None):
        public = self._mask(public_mask, X, len(y))
        if not public.any():
            raise ValueError(
                "public_scorer got a validation fold with no public row, so it has nothing "
                "it may score for free. Use more public rows, fewer folds, or dp_scorer."
            )
        bound = check_metric(self.metric, self.score_bound, estimator)
        scores = row_scores(estimator, _rows(X, public), _labels(y)[public], self.metric,
                            bound, private=False)
        return METRICS[self.metric] * float(scores.sum()) / scores.size

    def __repr__(self):
        return f"public_scorer(metric={self.metric!r})"


class _DPScorer(_RowScorer):
    def __init__(self, metric, score_bound, epsilon, accountant, random_state):
        super().__init__(metric, score_bound)
        self.epsilon = epsilon
        self.accountant = accountant
        self.random_state = random_state
        # A seed or a generator: one stream for all calls (an int seed must not repeat the
        # same noise per fold). None: fresh entropy per call and nothing kept, since a
        # fitted search keeps its scorer (``scorer_``), and a generator kept after drawing
        # the scores' noise could be stepped back to remove it.
        self._rng = None if random_state is None else check_generator(random_state)

    def event(self):
        return LaplaceMechanism(self.epsilon, check_metric(self.metric, self.score_bound)).event(
            source="dp_scorer")

    def _accountant_for(self, estimator):
        """The scorer's accountant; without one, the scored estimator's (its ``accountant``
        or a step's), when it holds exactly one."""
        if self.accountant is not None:
            return self.accountant
        found = {id(v): v for v in estimator.get_params(deep=True).values()
                 if isinstance(v, PrivacyAccountant)}
        if len(found) > 1:
            warnings.warn(
                "dp_scorer has no accountant and the scored estimator holds several, so this "
                "score's epsilon is charged to none of them. Pass accountant= to dp_scorer.",
                PrivacyLeakWarning, stacklevel=3)
            return None
        return next(iter(found.values()), None)

    def __call__(self, estimator, X, y, public_mask=None, curator_mask=None):
        n_rows = len(y)
        curator = _curator_rows(estimator, curator_mask, X, n_rows, "dp_scorer")
        if not curator.all():  # local agents' rows are never read
            if not curator.any():
                raise ValueError(
                    "dp_scorer got a validation fold with no curator row (curator_mask is "
                    "all False): local agents' rows are never scored. Use fewer folds or "
                    "more curator rows.")
            X, y = _rows(X, curator), _labels(y)[curator]
            public_mask = None if public_mask is None else np.asarray(public_mask)[curator]
            n_rows = int(curator.sum())
        public = (np.zeros(n_rows, dtype=bool) if public_mask is None
                  else check_mask(public_mask, n_rows, "public_mask",
                                  index=getattr(X, "index", None)))
        bound = check_metric(self.metric, self.score_bound, estimator)
        if (~public).any():
            _check_scorable(estimator, X, y)
            accountant = self._accountant_for(estimator)
            if accountant is not None:
                accountant.spend([self.event()])
                if self.random_state is not None and accountant.budget()[0] < math.inf:
                    warn_seed_reuse(
                        "dp_scorer", self.random_state, accountant,
                        f"dp_scorer: random_state={self.random_state!r} fixes the scores' "
                        "noise while the accountant's budget is finite. The scorer keeps it, "
                        "and a fitted search keeps the scorer (scorer_), so whoever holds the "
                        "search can replay the noise and remove it; joblib workers repeat a "
                        "seeded stream. Use random_state=None for releases.", stacklevel=2)
        scores = row_scores(estimator, X, y, self.metric, bound)
        rng = np.random.default_rng() if self._rng is None else self._rng
        return noisy_mean_score(scores, ~public, self.metric, bound, self.epsilon, rng)

    def __repr__(self):
        return f"dp_scorer(metric={self.metric!r}, epsilon={self.epsilon!r})"


def _check_scorable(estimator, X, y):
    """Refuse, before the charge, what makes ``predict`` refuse or mix every row for a
    public reason (a row's own refusal only scores that row as the worst: see
    :func:`row_scores`). Reads no private value: the estimator, shapes, and a ``predict``
    on zero rows."""
    batch = _batch_function(estimator)
    if batch is not None:
        func = getattr(batch.func, "__name__", type(batch.func).__name__)
        raise ValueError(
            f"dp_scorer: the estimator applies FunctionTransformer(func={func}) to the whole "
            "batch of scored rows: unless that function treats each row apart, one private "
            "row moves the other rows' scores, beyond the sensitivity the noise is "
            "calibrated to. Use an elementwise numpy ufunc (np.log1p, ...). Nothing was "
            "charged.")
    if not (isinstance(X, np.ndarray) or hasattr(X, "iloc") or hasattr(X, "tocsr")):
        # A list's rows are converted together by predict (check_array): one row's type
        # (Python floats among float32 rows, a string) decided every row's (red team 16).
        raise ValueError(
            f"dp_scorer needs X as a numpy array, a sparse matrix or a DataFrame, not a "
            f"{type(X).__name__}: a list's rows are converted together, so one row's type "
            "would decide how the others are read. Convert it first, e.g. "
            "np.asarray(X, dtype=float). Nothing was charged.")
    labels = _labels(y)
    if labels.shape[0] != X.shape[0]:
        raise ValueError(f"dp_scorer: X has {X.shape[0]} rows but y has {labels.shape[0]}. "
                         "Nothing was charged.")
    if labels.ndim > 1:
        raise ValueError(f"dp_scorer scores one output per row; y has {labels.shape[1]} "
                         "columns. Nothing was charged.")
    n_in, shape = getattr(estimator, "n_features_in_", None), getattr(X, "shape", ())
    if n_in is not None and len(shape) == 2 and not hasattr(X, "columns") and shape[1] != n_in:
        # (a frame is matched by column names, which may add columns)
        raise ValueError(f"dp_scorer: X has {shape[1]} features, but the estimator was "
                         f"fitted on {n_in}. Nothing was charged.")
    try:
        predict_silently(estimator, _rows(X, np.zeros(0, dtype=np.intp)))
    except NotFittedError as exc:
        raise ValueError(f"dp_scorer: {exc} Nothing was charged.") from None
    except Exception:  # noqa: BLE001 - zero rows are refused for other, harmless reasons
        pass


def _rows(X, keep):
    """The rows ``keep`` (a mask or indices) of a frame, an array, a sparse matrix or a
    list (a list of those rows, each as given)."""
    if hasattr(X, "iloc"):
        return X.iloc[keep]
    if isinstance(X, (list, tuple)):
        keep = np.asarray(keep)
        return [X[i] for i in (np.flatnonzero(keep) if keep.dtype == bool else keep)]
    return X[keep]


def public_scorer(metric="accuracy", *, score_bound=None):
    """A scorer that scores the public rows of each validation fold only: free.

    A score on public rows is a function of the (already charged) model and public data,
    so a search that ranks candidates with it charges nothing beyond the candidates'
    fits. Use it in scikit-learn's ``GridSearchCV`` / ``cross_validate`` with metadata
    routing on; it refuses a fold that has no public row. Choosing among privately
    trained models by public scores still releases every fit, so the search costs the
    sum of its fits (see :func:`search_cost`); :class:`PrivateSearchCV` pays for one
    selection instead.

    Parameters
    ----------
    metric : {"accuracy", "neg_mean_absolute_error"}, default="accuracy"
        The score; greater is better.
    score_bound : float, default=None
        Clipping bound of a row's absolute error (``"neg_mean_absolute_error"`` only).

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, public_mask=...)``.

    Examples
    --------
    >>> import sklearn
    >>> from sklearn.model_selection import GridSearchCV, KFold
    >>> from skhybrid import DPLogisticRegression
    >>> from skhybrid.model_selection import public_scorer
    >>> with sklearn.config_context(enable_metadata_routing=True):
    ...     search = GridSearchCV(DPLogisticRegression(epsilon=1.0, classes=[0, 1]),
    ...                           {"C": [0.1, 1.0]}, scoring=public_scorer(),
    ...                           cv=KFold(3, shuffle=True, random_state=0))
    """
    check_metric(metric, score_bound)
    return _PublicScorer(metric, score_bound)


def dp_scorer(metric="accuracy", *, epsilon, score_bound=None, accountant=None,
              random_state=None):
    """A scorer whose score on private rows is ε-DP, charged to an accountant per call.

    Public rows of the validation fold (routed ``public_mask``; without it every row
    counts as private) are scored exactly; for a hybrid-model estimator only the
    curator's rows (routed ``curator_mask``, which it then requires) are scored, since
    local agents' rows must never be read at the curator. The private rows' sum of bounded per-row
    scores goes through the Laplace mechanism on a lattice. Each call charges one
    ε-DP event *before* it reads the fold. In a plain ``GridSearchCV`` every fold score
    is charged, so the total is the fits plus the scores (:func:`search_cost` prices it);
    :class:`PrivateSearchCV` is the cheaper route to one tuned model.

    Parameters
    ----------
    metric : {"accuracy", "neg_mean_absolute_error"}, default="accuracy"
        The score; greater is better.
    epsilon : float
        The ε of each call (> 0).
    score_bound : float, default=None
        Clipping bound of a row's absolute error (``"neg_mean_absolute_error"`` only).
    accountant : PrivacyAccountant, default=None
        Charged once per call (on a fold with a private row), before the fold is read.
        ``None``: the scored estimator's accountant (its ``accountant`` parameter, or a
        Pipeline step's) when it holds exactly one, so the scores are charged where the
        fits are (with several it warns and charges none). With joblib workers use a
        durable ledger.
    random_state : int, Generator or None, default=None
        Noise source. ``None`` (fresh entropy for every call, and nothing kept) for
        releases: a seed or a generator is one stream for all calls in a process, kept by
        the scorer, which a fitted search keeps (``scorer_``), so whoever holds the search
        can replay the scores' noise; and with joblib workers every worker gets a copy of
        a seeded stream and repeats its noise.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, public_mask=None, curator_mask=None)``.
    """
    check_epsilon(epsilon, "epsilon", allow_inf=False)
    check_metric(metric, score_bound)
    if accountant is not None and not isinstance(accountant, PrivacyAccountant):
        raise ValueError("accountant must be None or a skhybrid PrivacyAccountant; got "
                         f"{type(accountant).__name__}.")
    return _DPScorer(metric, score_bound, epsilon, accountant, random_state)
