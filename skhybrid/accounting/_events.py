"""Privacy events: what a mechanism declares and the accountant records."""

import math
import time
from dataclasses import asdict, dataclass, field

__all__ = ["PrivacyEvent", "POPULATIONS", "EVENT_KINDS"]

#: The two populations (docs/privacy_model.rst): the curator's / private rows, and each
#: local agent.
POPULATIONS = ("central", "local")

#: Event kinds the accountant can compose. ``"approx"`` is a plain (ε, δ)-DP guarantee;
#: ``"pure"`` an ε-DP one (δ = 0); ``"gaussian"`` a Gaussian mechanism with noise ratio
#: ``mu = sensitivity / sigma`` (exact privacy curve, Balle & Wang 2018);
#: ``"zcdp"`` a ρ-zCDP guarantee (Bun & Steinke 2016). Anything else fails closed.
EVENT_KINDS = ("pure", "approx", "gaussian", "zcdp", "nonprivate")


@dataclass(frozen=True)
class PrivacyEvent:
    """One (possibly repeated) use of a mechanism on one population.

    Mechanisms declare their events before they run; the accountant composes them per
    population (:func:`~skhybrid.accounting.compose_events`) and records them in its
    ledger. An event's ``kind`` says which composition analyses apply to it.

    Parameters
    ----------
    mechanism : str
        Name of the mechanism (``"laplace"``, ``"exponential"``, ...).
    kind : {"pure", "approx", "gaussian", "zcdp", "nonprivate"}
        How the guarantee is expressed (see ``EVENT_KINDS``).
    epsilon, delta : float
        The (ε, δ)-DP guarantee of **one** use. Always present: it is the basic-composition
        view every event supports. For ``"gaussian"`` and ``"zcdp"`` events it is the
        guarantee the mechanism was calibrated to.
    count : int, default=1
        Number of adaptive uses (self-composition).
    rho : float or None
        The ρ-zCDP guarantee of one use, when known (``"zcdp"``, ``"gaussian"``, ``"pure"`` with
        ρ = ε²/2 by Bun & Steinke 2016 Prop. 1.4, or ε²/8 for bounded-range
        mechanisms such as the exponential mechanism, Cesar & Rogers 2021).
    mu : float or None
        Sensitivity-to-noise ratio Δ/σ of one use of a Gaussian mechanism.
    population : {"central", "local"}
        Whose privacy is spent.
    source : str
        Who spent it (usually the estimator's class name).
    params : dict
        Extra mechanism parameters worth keeping in the ledger (scale, sensitivity, ...).
    timestamp : float
        When the event was created (seconds since the epoch); not compared.
    """

    mechanism: str
    kind: str
    epsilon: float
    delta: float = 0.0
    count: int = 1
    rho: float = None
    mu: float = None
    population: str = "central"
    source: str = ""
    params: dict = field(default_factory=dict)
    timestamp: float = field(default_factory=time.time, compare=False)

    def __post_init__(self):
        if self.kind not in EVENT_KINDS:
            raise ValueError(
                f"Unknown privacy event kind {self.kind!r}; the accountant composes only "
                f"{EVENT_KINDS}. Express the guarantee as an (epsilon, delta) 'approx' event."
            )
        if self.population not in POPULATIONS:
            raise ValueError(f"population must be one of {POPULATIONS}, got {self.population!r}.")
        if not (self.epsilon >= 0):
            raise ValueError(f"epsilon of an event must be >= 0, got {self.epsilon!r}.")
        if not (0 <= self.delta <= 1):
            raise ValueError(f"delta of an event must lie in [0, 1], got {self.delta!r}.")
        if int(self.count) != self.count or self.count < 1:
            raise ValueError(f"count must be a positive integer, got {self.count!r}.")
        if self.kind == "pure" and self.delta != 0:
            raise ValueError("A 'pure' event must have delta = 0.")
        if self.kind == "gaussian" and not (self.mu is not None and self.mu > 0):
            raise ValueError("A 'gaussian' event needs mu = sensitivity / sigma > 0.")
        if self.kind == "zcdp" and self.rho is None:
            raise ValueError("A 'zcdp' event needs rho.")
        if self.kind == "nonprivate" and not math.isinf(self.epsilon):
            raise ValueError("A 'nonprivate' event has epsilon = inf.")

    @property
    def is_nonprivate(self):
        """Whether the event is a non-private use (ε = ∞ and no tighter view)."""
        return math.isinf(self.epsilon) and self.rho is None and self.mu is None

    def to_dict(self):
        """Return the event as a JSON-serialisable dict (used by the ledgers).

        Returns
        -------
        data : dict
            Every field, by name.
        """
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        """Rebuild an event from :meth:`to_dict`'s output.

        Parameters
        ----------
        data : dict
            Every field, by name.

        Returns
        -------
        event : PrivacyEvent
            The event (validated again).
        """
        return cls(**data)
