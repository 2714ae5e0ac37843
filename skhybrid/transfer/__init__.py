"""Private transfer learning in the hybrid model: Subsample-Test-Reweigh (Kohen & Sheffet)."""

from ._str import SubsampleTestReweigh

__all__ = ["SubsampleTestReweigh"]
