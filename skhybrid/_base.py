"""The mixin every skhybrid estimator shares: privacy parameters, charging, randomness."""

import functools
import math
import warnings
import weakref
from numbers import Integral

import numpy as np

from ._validation import check_delta, check_epsilon, check_generator, check_random_state_kind
from .accounting import POPULATIONS, PrivacyAccountant, PrivacyEvent, compose_events
from .accounting._accountant import _relabel, best_view
from .exceptions import SeedReuseWarning

__all__ = ["PrivateEstimatorMixin", "nonprivate_event"]


def nonprivate_event(population="central", source=""):
    """The event of a non-private computation on private rows (``epsilon=np.inf``).

    Recording it makes the accountant report an unbounded spend, and makes an accountant
    with a finite budget refuse the fit: a baseline run on budgeted data is a release.
    """
    return PrivacyEvent("nonprivate", "nonprivate", math.inf, population=population,
                        source=source)


#: Per accountant (held weakly), the (owner, seed) pairs already warned about: scikit-learn
#: resets Python's once-per-location registry on every fit (``check_array`` filters
#: warnings), so a search would repeat the warning for every fold.
_SEED_WARNED = weakref.WeakKeyDictionary()


def warn_seed_reuse(owner, random_state, accountant, message, stacklevel=2):
    """Emit ``message`` as a :class:`~skhybrid.SeedReuseWarning`, once per accountant,
    owner and seed (an int by value; a generator or ``RandomState`` by its type, since
    ``clone`` copies it for every fold)."""
    seed = (random_state if isinstance(random_state, Integral)
            else type(random_state).__name__)
    warned = _SEED_WARNED.setdefault(accountant, set())
    if (owner, seed) in warned:
        return
    warned.add((owner, seed))
    warnings.warn(message, SeedReuseWarning, stacklevel=stacklevel + 1)


def forget_fit(estimator):
    """Delete every fitted attribute (a public name ending in ``_``) of ``estimator``.

    A fit that sets some attributes only in some cases (``n_iter_`` of a non-private fit,
    App. A's ``bin_counts_``) would otherwise leave the previous fit's beside the new
    model, outside its ``privacy_spent_``; and a fit refused half-way would leave new
    ``classes_`` beside the old model. Called before every fit and after one that raises,
    so a refused fit leaves the estimator unfitted.
    """
    for name in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]:
        delattr(estimator, name)


def _forgetting(fit):
    @functools.wraps(fit)
    def fit_afresh(self, *args, **kwargs):
        forget_fit(self)
        try:
            # numpy's floating-point errors are ignored during a fit, whatever the caller
            # set with np.seterr: a private row's underflow (1e-200) would otherwise warn,
            # call back or raise after the charge, on that data set only (red team 15)
            with np.errstate(all="ignore"):
                return fit(self, *args, **kwargs)
        except BaseException:
            forget_fit(self)  # nor what the refused fit had set before it stopped
            raise

    fit_afresh._forgets_previous_fit = True
    return fit_afresh


class PrivateEstimatorMixin:
    """Shared plumbing for estimators with ``epsilon``, ``delta``, ``accountant``, ``random_state``.

    Subclasses call, in ``fit`` and in this order:

    1. :meth:`_check_privacy_params` (validates ε, δ and the accountant);
    2. :meth:`_charge` with every event the fit will spend — computed from parameters and
       the (public) mask alone — *before* touching private rows;
    3. :meth:`_make_rng`, then run.

    Every subclass's ``fit`` first forgets the previous fit (:func:`forget_fit`).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if fit is not None and not getattr(fit, "_forgets_previous_fit", False):
            cls.fit = _forgetting(fit)

    def _check_privacy_params(self, delta_required=False):
        check_epsilon(self.epsilon, "epsilon", allow_inf=True)
        check_delta(self.delta, "delta", strictly_positive=delta_required and not self.nonprivate)
        if self.accountant is not None and not isinstance(self.accountant, PrivacyAccountant):
            raise ValueError(
                "accountant must be None or a skhybrid.accounting.PrivacyAccountant; got "
                f"{type(self.accountant).__name__}."
            )

    @property
    def nonprivate(self):
        """True when ``epsilon=np.inf``: the paper's non-private algorithm (the baseline)."""
        return math.isinf(self.epsilon)

    def _make_rng(self):
        """The fit's generator; warns when a fixed seed or a generator meets a finite budget
        (once per accountant, class and seed).

        A seed or a generator passed as ``random_state`` makes the privacy noise a function
        of it, and the fitted estimator keeps it (``get_params``, pickle): whoever holds the
        estimator can replay the noise and subtract it — a generator's state can be stepped
        back to before the fit — and two fits with one seed on neighbouring data (a refit,
        another CV fold) differ by exactly what differs in the data. That is what tests and
        reproductions want, and what a release under a finite budget must not do.
        """
        rng = check_generator(self.random_state)
        seeded = self.random_state is not None
        if seeded and self.accountant is not None and self._spends_finite_budget():
            warn_seed_reuse(
                type(self).__name__, self.random_state, self.accountant,
                f"{type(self).__name__}: random_state={self.random_state!r} fixes the privacy "
                "noise while the accountant's budget is finite. The estimator keeps it "
                "(get_params, pickle), so whoever holds the fitted estimator can replay the "
                "noise and remove it (a generator can be stepped back to before the fit), "
                "and two fits with one seed (a refit, another CV fold) reuse the same noise. "
                "Use random_state=None for releases; seeds and generators are for tests and "
                "reproductions.",
                stacklevel=3,
            )
        return rng

    def _spends_finite_budget(self):
        spent = getattr(self, "privacy_spent_", {})
        return any(0 < eps < math.inf and self.accountant.budget(pop)[0] < math.inf
                   for pop, (eps, _) in spent.items())

    def _charge(self, events):
        """Spend ``events`` on the accountant (atomically) and record ``privacy_spent_``.

        Must be called before any private row is read. Raises
        :class:`~skhybrid.accounting.BudgetExceededError` (nothing computed) if over budget.
        """
        source = type(self).__name__
        # the generator is made after the charge (_make_rng): refuse a kind it cannot use
        # now, or the whole charge would be spent on a fit that then raises
        check_random_state_kind(getattr(self, "random_state", None),
                                suffix=" Nothing was charged.")
        # labelled as the ledger labels them
        events = [_relabel(e, source) for e in events if e is not None]
        if self.accountant is not None:
            self.accountant.spend(events, source=source)
        # The accountant's reporting rule, with the fit's own delta as the target: an
        # accountant whose delta budget equals this fit's reports the same numbers.
        target = self.delta if 0 < self.delta < 1 else None
        spent = {}
        for population in POPULATIONS:
            mine = [e for e in events if e.population == population]
            spent[population] = best_view(compose_events(mine, target))[1]
        self.privacy_spent_ = spent
        self.privacy_events_ = events
