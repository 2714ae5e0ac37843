"""BLAS threads for small dense loops.

A loop of many small dense products (a few hundred columns at most) pays more for
OpenBLAS's thread hand-off than it gains from a second core, and on a shared machine,
where the other core is busy, a multi-threaded BLAS call waits for it: the interior-point
hard-margin solver ran 1.7x slower with the default pool than with one thread with one
busy process beside it (``benchmarks/bench_threads.py --load 1``). skhybrid never changes
the process-wide setting; it limits BLAS to one thread only *inside* such loops, through
threadpoolctl (a scikit-learn dependency).
"""

from contextlib import nullcontext

from threadpoolctl import ThreadpoolController

__all__ = ["single_blas_thread", "single_blas_thread_if_small"]

#: Above this many columns a dense product is large enough to gain from BLAS threads.
SMALL_DENSE_COLUMNS = 256


_CONTROLLER = []


def _controller():
    # One controller for the process, as scikit-learn keeps one: building it scans the
    # loaded shared libraries (/proc/self/maps), which cost ~3 ms per call -- as much as
    # a whole 1,000-row DPLogisticRegression fit.
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def single_blas_thread():
    """Context manager: BLAS on one thread."""
    return _controller().limit(limits=1, user_api="blas")


def single_blas_thread_if_small(n_columns):
    """Context manager: BLAS on one thread when ``n_columns`` is small, else unchanged."""
    if n_columns <= SMALL_DENSE_COLUMNS:
        return single_blas_thread()
    return nullcontext()
