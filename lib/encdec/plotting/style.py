"""The course's visual style: colours by role, colour maps, line styles, markers, and the figure
factory every chart and diagram starts from. course/FIGURE_KEY.md is the same page for readers."""

import numpy as np

COLORS = {  # chosen to stay apart under protanopia, deuteranopia and tritanopia (course/FIGURE_KEY.md)
    "source": "#005AB5",     # encoder side: source tokens, encoder states, keys/values from the encoder
    "target": "#E69F00",     # decoder side: target tokens, decoder states, queries
    "cross": "#882E72",      # cross-attention: links from the decoder to the encoder
    "reference": "#949494",  # expected values, theory, the reference implementation
    "highlight": "#C62828",  # what the figure is about
    "masked": "#D9D9D9",     # hidden by a mask
}
CMAPS = {"encoder": "Blues", "decoder": "Oranges", "cross": "RdPu"}
LINES = {"measured": "-", "reference": "--", "threshold": ":"}
MARKERS = {"train": "o", "validation": "s", "test": "^"}


def shades(n):
    """n colours from light to dark red: several settings of one quantity (d_k = 4, 64, 512)."""
    import matplotlib
    cmap = matplotlib.colormaps["Reds"]
    return [cmap(x) for x in np.linspace(0.45, 0.95, n)] if n > 1 else [COLORS["highlight"]]


def _plt():
    import matplotlib.pyplot as plt
    return plt


def figure(nrows=1, ncols=1, width=4.2, height=3.4, **kwargs):
    """A figure with the course style; returns (fig, axes) with axes squeezed like plt.subplots."""
    plt = _plt()
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                             constrained_layout=True, **kwargs)
    for ax in np.atleast_1d(axes).ravel():
        ax.spines[["top", "right"]].set_visible(False)
    return fig, axes
