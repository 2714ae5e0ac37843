"""Figures for the reproductions, without pyplot: matplotlib is optional, and the user's
global matplotlib state (backend, open figures, rc parameters) is never touched."""

__all__ = ["check_matplotlib", "new_figure"]

_INSTALL = (
    "The paper reproductions save their figures with matplotlib, an optional dependency "
    'of skhybrid. Install it with `pip install "skhybrid[examples]"` (or `pip install '
    'matplotlib`).'
)


def check_matplotlib():
    """Raise ImportError, saying how to install matplotlib, if it is not installed."""
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc


def new_figure(nrows=1, ncols=1, *, figsize=None, **subplots_kw):
    """A figure and its axes, as ``pyplot.subplots`` returns them, but outside pyplot.

    The :class:`matplotlib.figure.Figure` is not registered with pyplot, so no backend is
    selected or switched, no GUI window opens and nothing needs closing; ``savefig`` renders
    with the file format's own canvas (Agg for PNG).
    """
    check_matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **subplots_kw)
