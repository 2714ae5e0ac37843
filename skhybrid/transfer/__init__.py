"""Private transfer learning in the hybrid model: Subsample-Test-Reweigh (Kohen & Sheffet)."""

from ._hard_margin import HardMarginLinearSVC, NotSeparableError
from ._parity_transfer import ParityTransfer
from ._sample_complexity import (
    RDPCuratorSize,
    STRRequirements,
    TightCuratorSize,
    chi2_plus_one_gaussian_scale,
    str_curator_size_rdp,
    str_curator_size_tight,
    str_kappa,
    str_min_curator_size,
    str_min_local_batch_size,
    str_requirements,
)
from ._sgd import NoisySGDClassifier
from ._str import SubsampleTestReweigh

__all__ = [
    "HardMarginLinearSVC",
    "NoisySGDClassifier",
    "NotSeparableError",
    "ParityTransfer",
    "RDPCuratorSize",
    "STRRequirements",
    "SubsampleTestReweigh",
    "TightCuratorSize",
    "chi2_plus_one_gaussian_scale",
    "str_curator_size_rdp",
    "str_curator_size_tight",
    "str_kappa",
    "str_min_curator_size",
    "str_min_local_batch_size",
    "str_requirements",
]
