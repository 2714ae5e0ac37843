"""DP base learners reused by several families."""

from ._logistic import DPLogisticRegression

__all__ = ["DPLogisticRegression"]
