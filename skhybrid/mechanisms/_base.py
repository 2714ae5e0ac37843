"""What every mechanism shares: validated parameters and the event it declares."""

import math

from .._validation import check_delta, check_epsilon, check_positive  # noqa: F401
from ..accounting import PrivacyEvent
from . import _noise


def check_sensitivity(sensitivity):
    return check_positive(sensitivity, "sensitivity")


class Mechanism:
    """Base class: a mechanism knows its guarantee before it runs (charge before release)."""

    name = "mechanism"
    kind = "pure"

    def _event_fields(self):
        """(epsilon, delta, extra fields) of one use; overridden by subclasses."""
        return self.epsilon, 0.0, {}

    def event(self, count=1, population="central", source=""):
        """Return the :class:`~skhybrid.accounting.PrivacyEvent` of ``count`` adaptive uses.

        Parameters
        ----------
        count : int, default=1
            Number of adaptive uses.
        population : {"central", "local"}, default="central"
            Whose privacy the uses spend.
        source : str, default=""
            Who spends it (usually an estimator's class name).

        Returns
        -------
        event : PrivacyEvent
            The event to charge before the mechanism runs.
        """
        epsilon, delta, extra = self._event_fields()
        return PrivacyEvent(
            mechanism=self.name,
            kind=self.kind,
            epsilon=epsilon,
            delta=delta,
            count=count,
            population=population,
            source=source,
            params=self.params(),
            **extra,
        )

    def params(self):
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {}


class SignRandomizer(Mechanism):
    """Base class of local randomizers that keep a ±1 / 0-1 answer w.p. e^ε/(1+e^ε).

    One report of such a randomizer is ε-LDP: the likelihood ratio of any report under
    two inputs is at most e^ε. Its events default to the ``"local"`` population.
    """

    @property
    def flip_probability(self):
        """Probability ``q`` that the report is not the true answer, as drawn.

        ``1/(e^ε+1)`` rounded up to a multiple of 2^-53, the probability the coin
        realises exactly (:func:`~skhybrid.mechanisms._noise.coin_probability`). The
        realised ratio ``(1−q)/q`` is therefore at most e^ε, also where ``e^ε/(1+e^ε)``
        rounds to 1.0 (ε ≳ 37: the report still flips with probability 2^-53).
        """
        t = math.exp(-self.epsilon)  # 1/(e^ε + 1) = e^-ε/(1 + e^-ε): no overflow
        return min(_noise.coin_probability(t / (1.0 + t), computed=True, positive=True), 0.5)

    @property
    def keep_probability(self):
        """Probability ``1 − q`` that the true answer is sent.

        ``e^ε/(1+e^ε)`` up to the coin's rounding (:attr:`flip_probability`).
        """
        return 1.0 - self.flip_probability

    @property
    def c_epsilon(self):
        """The debiasing factor ``1/(1 − 2q)`` of the coin drawn.

        ``(e^ε+1)/(e^ε−1)`` up to the coin's rounding (:attr:`flip_probability`).
        """
        return 1.0 / (1.0 - 2.0 * self.flip_probability)

    def event(self, count=1, population="local", source=""):
        """Return the per-agent event: ``count`` pure ε-LDP reports.

        Parameters
        ----------
        count : int, default=1
            Number of reports per agent.
        population : {"central", "local"}, default="local"
            Whose privacy the reports spend.
        source : str, default=""
            Who spends it (usually an estimator's class name).

        Returns
        -------
        event : PrivacyEvent
            The event to charge before the agents report.
        """
        return super().event(count=count, population=population, source=source)
