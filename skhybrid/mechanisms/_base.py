"""What every mechanism shares: validated parameters and the event it declares."""

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
        """The :class:`~skhybrid.accounting.PrivacyEvent` of ``count`` adaptive uses."""
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
        return {}
