"""Private transfer learning in the hybrid model: Subsample-Test-Reweigh (Kohen & Sheffet)."""

from ._hard_margin import HardMarginLinearSVC, NotSeparableError
from ._parity_transfer import ParityTransfer
from ._sgd import NoisySGDClassifier
from ._str import SubsampleTestReweigh

__all__ = [
    "HardMarginLinearSVC",
    "NoisySGDClassifier",
    "NotSeparableError",
    "ParityTransfer",
    "SubsampleTestReweigh",
]
