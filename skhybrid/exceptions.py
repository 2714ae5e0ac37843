"""Warnings and errors skhybrid raises (re-exported from :mod:`skhybrid`)."""

import warnings

from .accounting import BudgetExceededError, DetachedLedgerError

__all__ = [
    "PrivacyLeakWarning",
    "DegenerateModelWarning",
    "SeedReuseWarning",
    "BudgetExceededError",
    "DetachedLedgerError",
]


class PrivacyLeakWarning(UserWarning):
    """Something released by a fit is not covered by its privacy guarantee.

    Emitted when an estimator has to read a domain (the label set, a value range) from
    private rows because none was declared and no public row could supply it. The warning
    says which output falls outside the guarantee and which parameter declares the domain
    instead (for example ``classes=``). It never prints a private value. diffprivlib uses a
    warning of the same name for bounds computed from the data.

    To make such a fit an error rather than a warning::

        import warnings
        warnings.simplefilter("error", PrivacyLeakWarning)
    """


class SeedReuseWarning(PrivacyLeakWarning):
    """A fixed ``random_state`` meets a finite privacy budget: the noise is reproducible.

    Two releases with one seed on neighbouring data sets differ by exactly the private
    difference. Fixed seeds are for tests and reproductions; releases use
    ``random_state=None``.
    """


class DegenerateModelWarning(UserWarning):
    """A fit returned a model that cannot be useful.

    For instance a constant classifier, no parity found, or a threshold at the edge of its
    domain. The warning reads only what the fit released (a DP output, so post-processing) and
    public quantities; it says what the model does and what usually helps (more rows, a
    larger epsilon, data of the model's class).
    """


def label_repr(label):
    """A class label as a user wrote it (``0``, ``'yes'``), not as numpy prints it."""
    return repr(label.item() if hasattr(label, "item") else label)


def warn_degenerate(estimator, what, hint):
    """Emit a :class:`DegenerateModelWarning` for ``estimator`` (a name) from its fit."""
    warnings.warn(f"{estimator}: {what}. {hint}", DegenerateModelWarning, stacklevel=3)
