"""What every mechanism shares: validated parameters and the event it declares."""

import math

from .._validation import check_delta, check_epsilon, check_positive  # noqa: F401
from ..accounting import PrivacyEvent


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
    def keep_probability(self):
        """Probability ``e^ε/(1+e^ε)`` that the true answer is sent."""
        return 1.0 / (1.0 + math.exp(-self.epsilon))

    @property
    def c_epsilon(self):
        """The debiasing factor ``(e^ε+1)/(e^ε−1)``."""
        return 1.0 / math.tanh(self.epsilon / 2)

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
