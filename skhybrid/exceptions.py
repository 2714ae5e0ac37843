"""Warnings and errors skhybrid raises (re-exported from :mod:`skhybrid`)."""

from .accounting import BudgetExceededError, DetachedLedgerError

__all__ = ["PrivacyLeakWarning", "BudgetExceededError", "DetachedLedgerError"]


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
