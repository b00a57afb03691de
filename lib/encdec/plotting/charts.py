"""Charts of measured data: attention heatmaps, histograms, bars, curves, alignment arrows,
signed matrices and beam-search trees. Every chart follows course/FIGURE_KEY.md through
encdec.plotting.style.
"""

import numpy as np

from .style import CMAPS, COLORS, LINES, MARKERS, _plt, figure, shades


def heatmap(weights, rows=None, cols=None, kind="encoder", ax=None, title=None, annotate=False,
            row_label="query", col_label="key"):
    """Attention weights (m, n): rows are queries, columns keys; exact zeros from a mask are hatched."""
    plt = _plt()
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D (m, n) array of weights, got shape {weights.shape}")
    if ax is None:
        _, ax = figure(width=0.5 * weights.shape[1] + 2.2, height=0.45 * weights.shape[0] + 1.6)
    masked = weights == 0.0
    shown = np.ma.masked_where(masked, weights)
    cmap = plt.get_cmap(CMAPS.get(kind, kind)).copy()
    cmap.set_bad(COLORS["masked"])
    im = ax.imshow(shown, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    for i, j in zip(*np.nonzero(masked)):
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                   edgecolor="#9A9A9A", linewidth=0))
    m, n = weights.shape
    ax.set_xticks(range(n), cols if cols is not None else range(n), rotation=45 if cols is not None else 0,
                  ha="right" if cols is not None else "center")
    ax.set_yticks(range(m), rows if rows is not None else range(m))
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    if annotate:
        for i in range(m):
            for j in range(n):
                if not masked[i, j]:
                    ax.text(j, i, f"{weights[i, j]:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if weights[i, j] > 0.6 else "black")
    if title:
        ax.set_title(title)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.02, label="weight")
    return ax


def head_grid(weights, rows=None, cols=None, kind="encoder", title=None):
    """One heatmap per head: weights (h, m, n)."""
    weights = np.asarray(weights)
    if weights.ndim != 3:
        raise ValueError(f"head_grid needs weights of shape (h, m, n), got {weights.shape}")
    h, m, n = weights.shape
    fig, axes = figure(1, h, width=0.42 * n + 2.0, height=0.42 * m + 1.6)
    for k, ax in enumerate(np.atleast_1d(axes)):
        heatmap(weights[k], rows if k == 0 else [""] * m, cols, kind, ax=ax, title=f"head {k}",
                row_label="query" if k == 0 else "")
    if title:
        fig.suptitle(title)
    return fig


def histograms(samples, ax=None, title=None, xlabel="value", bins=60, colors=None):
    """Overlaid histograms, one per label: samples is {label: 1-D array}; shades of red, light to
    dark in the order given, unless `colors` says otherwise."""
    if ax is None:
        _, ax = figure()
    palette = colors or shades(len(samples))
    all_values = np.concatenate([np.ravel(v) for v in samples.values()])
    edges = np.histogram_bin_edges(all_values, bins=bins)
    for (label, values), color in zip(samples.items(), palette):
        ax.hist(np.ravel(values), bins=edges, alpha=0.55, color=color, label=label, density=True)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density")
    ax.legend(frameon=False, fontsize=8)
    if title:
        ax.set_title(title)
    return ax


def bars(values, labels=None, ax=None, title=None, role="target", highlight=None, ylabel="probability"):
    """A distribution as bars; index `highlight` (or a list of them) drawn in the highlight colour."""
    if ax is None:
        _, ax = figure()
    values = np.asarray(values, dtype=float)
    hl = set(np.atleast_1d(highlight).tolist()) if highlight is not None else set()
    colors = [COLORS["highlight"] if i in hl else COLORS[role] for i in range(len(values))]
    ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)), labels if labels is not None else range(len(values)))
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax


def curves(series, ax=None, title=None, xlabel="step", ylabel="loss", logy=False, colors=None):
    """Lines: series is {label: (x, y)} or {label: (x, y, split)} with split train/validation/test;
    labels containing "reference" or "theory" are dashed and grey; the others are shades of red,
    light to dark in the order given (or `colors`, e.g. [COLORS["target"]] for a model's output)."""
    if ax is None:
        _, ax = figure()
    measured = [k for k in series if "reference" not in k and "theory" not in k]
    palette = iter(colors or shades(len(measured)))
    for label, data in series.items():
        x, y = data[0], data[1]
        split = data[2] if len(data) > 2 else None
        if "reference" in label or "theory" in label:
            ax.plot(x, y, LINES["reference"], color=COLORS["reference"], label=label)
        else:
            ax.plot(x, y, LINES["measured"], color=next(palette), label=label,
                    marker=MARKERS.get(split), markevery=max(len(x) // 8, 1) if split else None, markersize=4)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, fontsize=8)
    if title:
        ax.set_title(title)
    return ax


def threshold(ax, y, label=None):
    """A horizontal dotted line marking a bound or target."""
    ax.axhline(y, linestyle=LINES["threshold"], color=COLORS["reference"], label=label)
    return ax


def alignment(source_tokens, target_tokens, weights, ax=None, title=None, min_weight=0.05):
    """Arrow diagram: target tokens (top, orange) linked to source tokens (bottom, blue), each link's
    opacity and width proportional to the cross-attention weight. weights (m, n) with m targets."""
    weights = np.asarray(weights, dtype=float)
    m, n = len(target_tokens), len(source_tokens)
    if weights.shape != (m, n):
        raise ValueError(f"weights of shape {weights.shape} must be (m, n) = ({m}, {n}) for these tokens")
    if ax is None:
        _, ax = figure(width=max(m, n) * 0.9 + 1.5, height=2.6)
    xs_t, xs_s = np.linspace(0, 1, m) if m > 1 else [0.5], np.linspace(0, 1, n) if n > 1 else [0.5]
    for i in range(m):
        for j in range(n):
            if weights[i, j] >= min_weight:
                ax.annotate("", xy=(xs_s[j], 0.12), xytext=(xs_t[i], 0.88),
                            arrowprops=dict(arrowstyle="-|>", color=COLORS["cross"],
                                            alpha=float(min(1.0, 0.15 + weights[i, j])),
                                            lw=0.5 + 3.5 * weights[i, j]))
    for x, tok in zip(xs_t, target_tokens):
        ax.text(x, 0.95, tok, ha="center", va="bottom", color=COLORS["target"], fontsize=11, weight="bold")
    for x, tok in zip(xs_s, source_tokens):
        ax.text(x, 0.05, tok, ha="center", va="top", color=COLORS["source"], fontsize=11, weight="bold")
    ax.set_xlim(-0.1, 1.1)
    ax.set_ylim(-0.1, 1.1)
    ax.axis("off")
    if title:
        ax.set_title(title)
    return ax


def matrix(values, ax=None, title=None, xlabel="column", ylabel="row", label="value"):
    """A signed matrix (e.g. position encodings): diverging colours, white at 0, symmetric range."""
    values = np.asarray(values, dtype=float)
    if ax is None:
        _, ax = figure(width=5.0, height=3.6)
    limit = float(np.max(np.abs(values))) or 1.0
    im = ax.imshow(values, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.02, label=label)
    return ax


def beam_tree(nodes, best=(), ax=None, title=None):
    """A beam search as a tree, one column per step, left to right.

    nodes: list of (node_id, parent_id, step, label, score, state); the root has parent_id None and
    step 0; state is "kept" (in the beam after its step), "finished" (ended with EOS) or "dropped"
    (a candidate the beam let go). best: the node ids of the returned hypothesis. Kept hypotheses are
    orange (the decoder side), finished ones sit in a box, dropped candidates are light grey, and the
    returned hypothesis is red. Scores (total log-probabilities) are printed under the tokens.
    """
    plt = _plt()
    by_id = {n[0]: n for n in nodes}
    best = set(best)
    columns = {}
    for n in nodes:
        columns.setdefault(n[2], []).append(n)
    y = {}
    for step in sorted(columns):
        col = sorted(columns[step], key=lambda n: (-y.get(n[1], 0.0), -n[4]))  # under their parents
        for i, n in enumerate(col):
            y[n[0]] = (len(col) - 1) / 2 - i
    if ax is None:
        _, ax = figure(width=1.25 * len(columns) + 1.0, height=0.42 * max(len(c) for c in columns.values()) + 1.2)
    for node_id, parent, step, label, score, state in nodes:
        if parent is None:
            continue
        on_best = node_id in best and parent in best
        color = COLORS["highlight"] if on_best else (COLORS["masked"] if state == "dropped" else COLORS["target"])
        ax.plot([by_id[parent][2], step], [y[parent], y[node_id]], color=color, lw=2.4 if on_best else 1.0,
                zorder=1)
    for node_id, parent, step, label, score, state in nodes:
        if node_id in best:
            color = COLORS["highlight"]
        elif state == "dropped":
            color = "#9A9A9A"
        else:
            color = COLORS["target"]
        box = dict(boxstyle="square,pad=0.25", fc="white", ec=color, lw=1.2) if state == "finished" else \
            dict(boxstyle="round,pad=0.2", fc="white", ec="none")
        ax.text(step, y[node_id], label, ha="center", va="center", color=color, fontsize=10,
                weight="bold" if state != "dropped" else "normal", bbox=box, zorder=3)
        if parent is not None:
            ax.text(step, y[node_id] - 0.32, f"{score:.2f}", ha="center", va="center", color=color, fontsize=7,
                    zorder=3)
    ax.set_xticks(sorted(columns), [f"step {s}" if s else "start" for s in sorted(columns)])
    ax.set_yticks([])
    ax.spines[["left", "bottom"]].set_visible(False)
    ax.tick_params(axis="x", length=0)
    ax.set_xlim(-0.5, max(columns) + 0.5)
    ax.set_ylim(min(y.values()) - 0.7, max(y.values()) + 0.6)
    if title:
        ax.set_title(title)
    return ax
