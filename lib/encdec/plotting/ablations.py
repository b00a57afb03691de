"""The ablation ladder's results, drawn from the shipped file (lib/encdec/data/ablations.json, made by
`make ablations`): one table and one figure, nothing trained.

    from encdec.plotting.ablations import ablation_table, ablation_curves
    print(ablation_table())                      # one line per row: exact match, loss, seed spread, seconds
    fig = ablation_curves(rows=["full model", "no positions"])
"""

import json
from pathlib import Path

import numpy as np

from .style import COLORS, LINES, MARKERS, _plt, figure

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "ablations.json"


def load_results(results=None):
    """The results document: a dict as written by encdec.ablation_runs, a path to one, or the shipped one."""
    if isinstance(results, dict):
        return results
    return json.loads(Path(SHIPPED if results is None else results).read_text())


def table_rows(results=None):
    """One dict per row: name, exact match (mean, min, max over the seeds), final loss (mean, min, max),
    seconds per run (mean, max)."""
    out = []
    for row in load_results(results)["rows"]:
        em, loss, sec = row["exact_match"], row["final_loss"], row["seconds"]
        out.append({"name": row["name"], "exact_match": em["mean"], "exact_match_min": em["min"],
                    "exact_match_max": em["max"], "final_loss": loss["mean"], "final_loss_min": loss["min"],
                    "final_loss_max": loss["max"], "seconds": sec["mean"], "seconds_max": sec["max"]})
    return out


def ablation_table(results=None):
    """The table as text: exact match and held-out loss after the last step, mean and [min, max] over the seeds."""
    doc = load_results(results)
    lines = [f"{doc['task']}; {doc['config']['steps']} steps; seeds {', '.join(map(str, doc['seeds']))}",
             f"{'row':<36} {'exact match':>11} {'[min, max]':>15} {'loss':>8} {'[min, max]':>17} {'s/run':>6}"]
    for r in table_rows(doc):
        em_spread = "[{:.1%}, {:.1%}]".format(r["exact_match_min"], r["exact_match_max"])
        loss_spread = "[{:.4f}, {:.4f}]".format(r["final_loss_min"], r["final_loss_max"])
        lines.append(f"{r['name']:<36} {r['exact_match']:>11.1%} {em_spread:>15} "
                     f"{r['final_loss']:>8.4f} {loss_spread:>17} {r['seconds']:>6.1f}")
    return "\n".join(lines)


def _band(runs, step_key, value_key):
    steps = np.asarray(runs[0][step_key])
    values = np.array([r[value_key] for r in runs], dtype=float)
    return steps, values.mean(0), values.min(0), values.max(0)


def ablation_curves(results=None, rows=None):
    """Held-out exact match (left) and held-out cross-entropy (right, log scale) against training steps.

    One line per row (the mean over the seeds) in a band from the lowest to the highest seed; the full
    model is the reference, grey and dashed; `rows` picks rows by name (default: all). Returns the figure.
    """
    doc = load_results(results)
    chosen = [r for r in doc["rows"] if rows is None or r["name"] in rows]
    if rows is not None and len(chosen) != len(rows):
        unknown = sorted(set(rows) - {r["name"] for r in doc["rows"]})
        raise ValueError(f"no row named {unknown}; the rows are {[r['name'] for r in doc['rows']]}")
    fig, (ax_em, ax_loss) = figure(1, 2, width=4.6, height=3.6)
    tab10 = _plt().get_cmap("tab10")
    palette = [tab10(i) for i in range(10) if i != 7]  # tab10 without its grey, the reference's colour
    variants = [r for r in chosen if r["name"] != "full model"]
    for row in chosen:
        full = row["name"] == "full model"
        color = COLORS["reference"] if full else (COLORS["highlight"] if len(variants) == 1
                                                   else palette[variants.index(row) % len(palette)])
        style = dict(color=color, linestyle=LINES["reference"] if full else LINES["measured"],
                     linewidth=2.2 if full else 1.4, label=row["name"] + (" (reference)" if full else ""),
                     zorder=3 if full else 2)
        for ax, key in ((ax_em, "exact_match"), (ax_loss, "eval_loss")):
            steps, mean, lo, hi = _band(row["runs"], "eval_step", key)
            ax.plot(steps, mean, marker=MARKERS["validation"], markersize=3, **style)
            ax.fill_between(steps, lo, hi, color=color, alpha=0.15, linewidth=0)
    ax_em.set(xlabel="training step", ylabel="held-out exact match", ylim=(-0.02, 1.02),
              title="exact match (greedy)")
    ax_loss.set(xlabel="training step", ylabel="held-out cross-entropy (nats per token)", yscale="log",
                title="held-out loss")
    ax_loss.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    fig.suptitle(f"{doc['task']}: mean of {len(doc['seeds'])} seeds, band from lowest to highest", fontsize=9)
    return fig
