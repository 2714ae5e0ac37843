"""DP base learners reused by several families."""

from ._logistic import DPLogisticRegression
from ._parity import PrivateParityClassifier

__all__ = ["DPLogisticRegression", "PrivateParityClassifier"]
