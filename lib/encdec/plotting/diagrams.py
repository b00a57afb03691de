"""Diagrams of the model itself, drawn by code in the style of course/FIGURE_KEY.md.

One visual language for all of them:
- a box is a computation, coloured by role (encoder blue, decoder orange, cross-attention purple,
  neutral grey), with its name from the library (`self_attn`, `cross_attn`, `ffn`, ...);
- a chip with a solid border is a [LEARNED] parameter, a chip with a dashed border a [CONFIG]
  choice; an arrow is [STATE], a tensor computed while the model runs, labelled with its shape;
- red marks the point of the figure (in the course map: this lesson's part); everything else in
  the course map is faded.

Every diagram returns its matplotlib Figure. `fig.library_names` lists the library names it
prints (attributes, parameters, functions), so a test can check that they exist in `encdec`;
`fig.alt_text` says in words what the figure shows. `render_all(folder)` writes every figure the
lessons embed, as SVG, for `make notebooks`.
"""

from dataclasses import dataclass, field

import numpy as np

from .style import COLORS, _plt

NEUTRAL = "#4D4D4D"
FADED_TEXT = "#A6A6A6"


def _tint(color, amount):
    """`color` mixed with white: amount 0 keeps it, 1 gives white."""
    import matplotlib.colors as mcolors
    rgb = np.array(mcolors.to_rgb(color))
    return tuple(rgb + (1.0 - rgb) * amount)


@dataclass
class Canvas:
    """An axis in diagram units (x to the right, y up), with the course's drawing primitives."""

    width: float
    height: float
    scale: float = 0.55  # inches per unit
    highlight: frozenset = frozenset()  # keys drawn in full, red-outlined; the rest faded when non-empty
    names: set = field(default_factory=set)

    def __post_init__(self):
        plt = _plt()
        self.fig = plt.figure(figsize=(self.width * self.scale, self.height * self.scale))
        self.ax = self.fig.add_axes([0, 0, 1, 1])
        self.ax.set_xlim(0, self.width)
        self.ax.set_ylim(0, self.height)
        self.ax.set_aspect("equal")
        self.ax.axis("off")

    # -- state of one element ------------------------------------------------------------------
    def _faded(self, key):
        return bool(self.highlight) and key is not None and key not in self.highlight

    def _lit(self, key):
        return bool(self.highlight) and key is not None and key in self.highlight

    def _code(self, names):
        self.names.update(names or ())

    # -- primitives --------------------------------------------------------------------------------
    def box(self, x, y, w, h, text, role="neutral", key=None, code=(), fontsize=9, weight="normal", fill=None):
        """A computation: a rounded box centred at (x, y)."""
        from matplotlib.patches import FancyBboxPatch
        self._code(code)
        color = COLORS.get(role, NEUTRAL)
        faded, lit = self._faded(key), self._lit(key)
        face = fill if fill is not None else _tint(color, 0.82)
        if faded:
            face, color = _tint(face, 0.5), _tint(color, 0.55)
        edge = COLORS["highlight"] if lit else color
        patch = FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
                               fc=face, ec=edge, lw=2.6 if lit else 1.2, zorder=2)
        self.ax.add_patch(patch)
        self.ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, zorder=3, weight=weight,
                     color=FADED_TEXT if faded else "#1A1A1A", linespacing=1.25)
        return patch

    def frame(self, x0, y0, x1, y1, role, key=None, label=None, label_at="top"):
        """A group of boxes (a block of the stack): a light rounded frame with a label."""
        from matplotlib.patches import FancyBboxPatch
        color = COLORS.get(role, NEUTRAL)
        faded, lit = self._faded(key), self._lit(key)
        face, edge = _tint(color, 0.93), _tint(color, 0.3)
        if faded:
            face, edge = _tint(face, 0.6), _tint(edge, 0.65)
        if lit:
            edge = COLORS["highlight"]
        self.ax.add_patch(FancyBboxPatch((x0, y0), x1 - x0, y1 - y0, boxstyle="round,pad=0.02,rounding_size=0.25",
                                         fc=face, ec=edge, lw=2.6 if lit else 1.0, zorder=1))
        if label:
            ty = y1 - 0.28 if label_at == "top" else y0 + 0.28
            self.ax.text(x0 + 0.2, ty, label, ha="left", va="center", fontsize=8.5, style="italic",
                         color=FADED_TEXT if faded else _tint(color, 0.0), zorder=3)

    def chip(self, x, y, text, tag, key=None, code=(), fontsize=8, role=None, ha="center"):
        """A parameter ([LEARNED], solid border) or a choice ([CONFIG], dashed border)."""
        if tag not in ("LEARNED", "CONFIG"):
            raise ValueError(f"a chip is LEARNED or CONFIG, got {tag!r}")
        self._code(code)
        color = COLORS.get(role, NEUTRAL) if role else NEUTRAL
        lit = self._lit(key) or (tag == "LEARNED" and "learned" in self.highlight)  # every parameter at once
        faded = self._faded(key) and not lit
        if faded:
            color = _tint(color, 0.6)
        if lit:
            color = COLORS["highlight"]
        self.ax.text(x, y, text, ha=ha, va="center", fontsize=fontsize, zorder=4,
                     color=FADED_TEXT if faded else "#1A1A1A",
                     bbox=dict(boxstyle="round,pad=0.28,rounding_size=0.15", fc="white", ec=color,
                               lw=1.6 if tag == "LEARNED" else 1.3, ls="-" if tag == "LEARNED" else (0, (3, 2))))

    def arrow(self, start, end, label=None, role="neutral", key=None, code=(), label_pos=0.5, label_side="right",
              style="-|>", connection="arc3", fontsize=7.5, lw=1.3, dashed=False, label_offset=0.12):
        """A [STATE] tensor flowing from start to end, labelled (name and shape) beside the arrow."""
        self._code(code)
        color = COLORS.get(role, NEUTRAL)
        faded, lit = self._faded(key), self._lit(key)
        if faded:
            color = _tint(color, 0.65)
        if lit:
            color = COLORS["highlight"]
        self.ax.annotate("", xy=end, xytext=start, zorder=1.5,
                         arrowprops=dict(arrowstyle=style, color=color, lw=2.0 if lit else lw,
                                         shrinkA=0, shrinkB=0, connectionstyle=connection,
                                         linestyle=(0, (4, 2)) if dashed else "-"))
        if label:
            (x0, y0), (x1, y1) = start, end
            lx, ly = x0 + (x1 - x0) * label_pos, y0 + (y1 - y0) * label_pos
            dx = {"right": label_offset, "left": -label_offset}.get(label_side, 0.0)
            dy = {"above": label_offset, "below": -label_offset}.get(label_side, 0.0)
            ha = {"right": "left", "left": "right"}.get(label_side, "center")
            va = {"above": "bottom", "below": "top"}.get(label_side, "center")
            self.ax.text(lx + dx, ly + dy, label, ha=ha, va=va, fontsize=fontsize, zorder=4,
                         color=FADED_TEXT if faded else (COLORS["highlight"] if lit else "#333333"))

    def line(self, points, role="neutral", key=None, lw=1.2, dashed=False, arrow_at_end=True):
        """A path through several points (a residual connection, a tensor taking a detour)."""
        color = COLORS.get(role, NEUTRAL)
        faded, lit = self._faded(key), self._lit(key)
        if faded:
            color = _tint(color, 0.65)
        if lit:
            color = COLORS["highlight"]
        xs, ys = zip(*points)
        self.ax.plot(xs[:-1] if arrow_at_end else xs, ys[:-1] if arrow_at_end else ys, color=color,
                     lw=2.0 if lit else lw, ls=(0, (4, 2)) if dashed else "-", zorder=1.5, solid_capstyle="butt")
        if arrow_at_end:
            self.arrow(points[-2], points[-1], role=role, key=key, lw=lw, dashed=dashed)

    def plus(self, x, y, key=None, role="neutral"):
        """The residual add."""
        from matplotlib.patches import Circle
        color = COLORS.get(role, NEUTRAL)
        faded = self._faded(key)
        if faded:
            color = _tint(color, 0.65)
        self.ax.add_patch(Circle((x, y), 0.17, fc="white", ec=color, lw=1.2, zorder=3))
        self.ax.text(x, y - 0.01, "+", ha="center", va="center", fontsize=9, color=color, zorder=4)

    def text(self, x, y, text, key=None, fontsize=8, color="#333333", **kwargs):
        if self._lit(key):
            color = COLORS["highlight"]
        elif self._faded(key):
            color = FADED_TEXT
        self.ax.text(x, y, text, fontsize=fontsize, color=color, zorder=4, **kwargs)

    def legend(self, y=0.3, x=None, items=("LEARNED", "CONFIG", "STATE")):
        """The tag key along the bottom: solid chip, dashed chip, arrow."""
        x = self.width / 2 if x is None else x
        labels = {"LEARNED": "[LEARNED] parameter", "CONFIG": "[CONFIG] choice", "STATE": "[STATE] tensor, with shape"}
        total = 3.4 * len(items)
        cx = x - total / 2 + 0.2
        for item in items:
            if item == "STATE":
                self.ax.annotate("", xy=(cx + 0.7, y), xytext=(cx, y),
                                 arrowprops=dict(arrowstyle="-|>", color=NEUTRAL, lw=1.2, shrinkA=0, shrinkB=0))
                self.ax.text(cx + 0.85, y, labels[item], ha="left", va="center", fontsize=7.5, color="#333333")
            else:
                saved = self.highlight
                self.highlight = frozenset()
                self.chip(cx + 0.35, y, "  ", item)
                self.highlight = saved
                self.ax.text(cx + 0.85, y, labels[item], ha="left", va="center", fontsize=7.5, color="#333333")
            cx += 3.4

    def finish(self, alt_text):
        self.fig.library_names = sorted(self.names)
        self.fig.alt_text = alt_text
        return self.fig


# -- the course map ---------------------------------------------------------------------------------
LESSON_TITLES = {
    1: "Attention from scratch", 2: "The encoder stack", 3: "The decoder stack: causal self-attention",
    4: "Cross-attention", 5: "Block ordering", 6: "Assembling the model", 7: "Backpropagation",
    8: "Training", 9: "Decoding", 10: "Capstone: PyTorch on a GPU",
}
MAP_PARTS = {  # what each lesson adds to the model: the keys the course map highlights
    1: {"enc_self", "dec_self", "cross", "positions_src", "positions_tgt", "positions"},
    2: {"enc_block", "enc_self", "enc_ffn", "src_mask", "enc_final"},
    3: {"dec_self", "tgt_mask", "head", "embedding"},
    4: {"cross", "H_enc", "src_mask"},
    5: {"dec_block", "dec_self", "cross", "dec_ffn"},
    6: {"embed_src", "embed_tgt", "embedding", "positions", "enc_final", "dec_final", "head", "enc_block",
        "dec_block", "enc_self", "enc_ffn", "dec_self", "cross", "dec_ffn", "H_enc", "src", "tgt", "src_mask",
        "tgt_mask"},
    7: {"loss", "backward", "learned", "embedding"},
    8: {"loss", "backward", "optimizer", "tgt", "learned", "embedding", "dropout"},
    9: {"decode", "feedback"},
    10: {"loss", "backward", "optimizer", "decode", "feedback", "device"},
}


def course_map(lesson=None):
    """The whole encoder-decoder, bottom to top, with lesson `lesson`'s part in red (None: no highlight)."""
    if lesson is not None and lesson not in MAP_PARTS:
        raise ValueError(f"lesson must be one of {sorted(MAP_PARTS)} or None, got {lesson!r}")
    c = Canvas(16.0, 13.6, scale=0.56, highlight=frozenset(MAP_PARTS.get(lesson, ())))
    ex, dx = 4.2, 11.0  # column centres: encoder, decoder
    title = "The course map: the encoder–decoder transformer"
    if lesson is not None:
        title = f"Lesson {lesson}, {LESSON_TITLES[lesson]}: its part of the model in red"
    c.text(8.0, 13.2, title, ha="center", va="center", fontsize=10.5, weight="bold", color="#1A1A1A")

    # inputs and embeddings
    c.text(ex, 1.0, "source tokens  src (B, n)", key="src", ha="center", va="center", fontsize=8.5,
           color=COLORS["source"], weight="bold")
    c.text(dx, 1.0, "target tokens, shifted right  tgt_in (B, m)", key="tgt", ha="center", va="center",
           fontsize=8.5, color=COLORS["target"], weight="bold")
    c.box(ex, 2.0, 3.7, 0.62, "embed: E[src] · √d_model + PE", "source", key="embed_src", code=("embed",))
    c.box(dx, 2.0, 3.7, 0.62, "embed: E[tgt_in] · √d_model + PE", "target", key="embed_tgt", code=("embed",))
    c.arrow((ex, 1.25), (ex, 1.69), key="embed_src")
    c.arrow((dx, 1.25), (dx, 1.69), key="embed_tgt")
    c.chip(7.6, 2.0, "embedding E\n(V, d_model)", "LEARNED", key="embedding", code=("embedding",), fontsize=7)
    c.chip(7.6, 1.35, "sinusoidal_positions", "CONFIG", key="positions", code=("sinusoidal_positions",), fontsize=7)

    # the encoder stack
    c.frame(1.6, 2.75, 6.8, 7.35, "source", key="enc_block", label="encoder block (EncoderBlock)")
    c.chip(6.35, 7.0, "× N_enc", "CONFIG", key="enc_block")
    # pre-norm: each sublayer reads RMSNorm(x), so each gain sits on the arrow *entering* its sublayer
    c.arrow((ex, 2.31), (ex, 3.35), "(B, n, d_model)", key="embed_src", label_pos=0.2)
    c.chip(ex, 3.07, "RMSNorm · norm1_gamma", "LEARNED", key="enc_block", code=("norm1_gamma",), fontsize=6.5)
    c.box(ex, 3.85, 4.0, 0.9, "self_attn: multi-head self-attention\nbidirectional, padding mask", "source",
          key="enc_self", code=("self_attn",))
    c.arrow((ex, 4.3), (ex, 5.45), key="enc_block")
    c.chip(ex, 4.88, "RMSNorm · norm2_gamma", "LEARNED", key="enc_block", code=("norm2_gamma",), fontsize=6.5)
    c.box(ex, 5.85, 4.0, 0.8, "ffn: feed-forward, GELU\neach position alone", "source", key="enc_ffn", code=("ffn",))
    c.text(1.85, 6.62, "each sublayer:\nx + F(RMSNorm(x))", key="enc_block", fontsize=6.5, style="italic", va="center")
    c.chip(2.0, 4.9, "src_mask rule:\nhide pads (here and\nin cross-attention)", "CONFIG", key="src_mask", fontsize=6)
    c.arrow((ex, 6.25), (ex, 7.85), key="enc_block")
    c.box(ex, 8.2, 3.4, 0.72, "final RMSNorm\nencoder_norm_gamma", "source", key="enc_final", code=("encoder_norm_gamma",),
          fontsize=8)

    # H_enc into every decoder block's cross-attention
    c.line([(ex + 1.6, 8.2), (7.9, 8.2), (7.9, 5.85), (8.7, 5.85)], role="cross", key="H_enc", lw=1.6)
    c.text(6.0, 8.45, "H_enc (B, n, d_model)", key="H_enc", fontsize=7.5, color=COLORS["cross"])
    c.text(6.05, 7.75, "to every decoder block", key="H_enc", fontsize=6.5, color=COLORS["cross"], style="italic")

    # the decoder stack
    c.frame(8.5, 2.75, 13.6, 9.15, "target", key="dec_block", label="decoder block (DecoderBlock)")
    c.chip(13.1, 8.8, "× N_dec", "CONFIG", key="dec_block")
    c.arrow((dx, 2.31), (dx, 3.35), "(B, m, d_model)", key="embed_tgt", label_pos=0.2)
    c.chip(dx, 3.07, "RMSNorm · norm1_gamma", "LEARNED", key="dec_block", code=("norm1_gamma",), fontsize=6.5)
    c.box(dx, 3.85, 4.0, 0.9, "self_attn: masked self-attention\ncausal + target padding", "target",
          key="dec_self", code=("self_attn",))
    c.chip(14.85, 3.85, "tgt mask rule:\nhide the future\nand the pads", "CONFIG", key="tgt_mask", fontsize=6.5)
    c.arrow((dx, 4.3), (dx, 5.4), key="dec_block")
    c.chip(dx, 4.85, "RMSNorm · norm2_gamma", "LEARNED", key="dec_block", code=("norm2_gamma",), fontsize=6.5)
    c.box(dx, 5.85, 4.0, 0.9, "cross_attn: cross-attention\nQ from RMSNorm(x),\nK and V from H_enc", "cross",
          key="cross", code=("cross_attn",), fontsize=8)
    c.arrow((dx, 6.3), (dx, 7.25), key="dec_block")
    c.chip(dx, 6.78, "RMSNorm · norm3_gamma", "LEARNED", key="dec_block", code=("norm3_gamma",), fontsize=6.5)
    c.box(dx, 7.65, 4.0, 0.8, "ffn: feed-forward, GELU", "target", key="dec_ffn", code=("ffn",))
    c.text(8.75, 8.45, "each sublayer:\nx + F(RMSNorm(x))", key="dec_block", fontsize=6.5, style="italic", va="center")
    c.arrow((dx, 8.05), (dx, 9.6), key="dec_block")
    c.box(dx, 9.9, 4.0, 0.62, "final RMSNorm · decoder_norm_gamma", "target", key="dec_final",
          code=("decoder_norm_gamma",), fontsize=7)

    # the head, and what the logits are for
    c.arrow((dx, 10.2), (dx, 10.55), key="head")
    c.box(dx, 10.85, 3.6, 0.6, "tied head: logits = h Eᵀ", "target", key="head")
    if "backward" in c.highlight:  # the head's share of dE flows back to E: the arrow points at E
        c.line([(dx - 1.8, 10.85), (7.6, 10.85), (7.6, 2.45)], key="embedding", dashed=True)
        c.text(7.75, 10.55, "the same E: the head's\nshare of dE flows back", key="embedding", fontsize=6,
               style="italic", va="top")
    else:
        c.line([(7.6, 2.45), (7.6, 10.85), (dx - 1.8, 10.85)], key="embedding", dashed=True)
        c.text(7.75, 10.55, "the same E", key="embedding", fontsize=6.5, style="italic")
    c.arrow((dx - 0.9, 11.15), (dx - 2.2, 11.95), "logits (B, m, V)", key="loss", label_side="left",
            label_pos=0.35)
    c.arrow((dx + 0.9, 11.15), (dx + 2.0, 11.95), key="decode")
    c.box(dx - 3.1, 12.3, 3.4, 0.62, "loss: cross-entropy (training)", "neutral", key="loss")
    c.box(dx + 2.6, 12.3, 3.2, 0.62, "next token (decoding)", "target", key="decode")
    c.line([(dx + 4.2, 12.3), (15.6, 12.3), (15.6, 1.0), (dx + 2.85, 1.0)], role="target", key="feedback",
           dashed=True)
    c.text(15.45, 6.6, "appended to tgt_in,\nnext step", key="feedback", fontsize=6.5, ha="right", style="italic")
    if "backward" in c.highlight:  # the backward pass: every forward arrow, run the other way
        back = [(dx - 2.4, 11.99, dx - 0.55, 11.2), (dx + 0.35, 10.55, dx + 0.35, 10.2),
                (dx + 0.35, 9.6, dx + 0.35, 8.05), (dx + 0.35, 7.25, dx + 0.35, 6.3), (dx + 0.35, 5.4, dx + 0.35, 4.3),
                (dx + 0.35, 3.35, dx + 0.35, 2.31), (ex + 0.35, 7.85, ex + 0.35, 6.25),
                (ex + 0.35, 5.45, ex + 0.35, 4.3), (ex + 0.35, 3.35, ex + 0.35, 2.31),
                (ex + 1.9, 1.85, 6.75, 1.85), (dx - 1.9, 1.85, 8.45, 1.85)]
        for x0, y0, x1, y1 in back:
            c.arrow((x0, y0), (x1, y1), key="backward", lw=1.0)
        c.line([(8.7, 5.55), (7.75, 5.55), (7.75, 7.95), (ex + 1.75, 7.95)], key="backward", lw=1.0)
        c.text(0.5, 12.3, "gradients flow back along\nevery arrow: head, decoder,\nH_enc, encoder, down to E;\n"
               "every [LEARNED] array gets one", key="backward", fontsize=6.5, style="italic", va="top")
    c.chip(2.9, 10.9, "optimizer: Adam (L8),\nAdamW (L10); lr schedule", "CONFIG", key="optimizer", fontsize=6.5)
    c.chip(2.9, 9.75, "NumPy, or PyTorch\non a GPU", "CONFIG", key="device", fontsize=6.5)
    c.chip(14.4, 10.85, "dropout rate\n(training only)", "CONFIG", key="dropout", fontsize=6.5)
    c.legend(y=0.3)
    where = f" Lesson {lesson}'s part ({LESSON_TITLES[lesson]}) is drawn in red; the rest is faded." \
        if lesson is not None else ""
    return c.finish(
        "The course map. Source tokens are embedded and pass through N_enc encoder blocks (bidirectional "
        "self-attention, feed-forward) and a final RMSNorm, giving H_enc. Target tokens, shifted right, are "
        "embedded with the same matrix E and pass through N_dec decoder blocks (causal self-attention, "
        "cross-attention reading H_enc, feed-forward) and a final RMSNorm; the tied head h E^T gives the "
        "logits, used by the loss in training and to pick the next token in decoding." + where)


# -- one decoder block (Lessons 3 and 5) -----------------------------------------------------------------
def _sublayer(c, y, norm, box_text, role, params, stream_x=2.2, key=None, code=(), box_w=4.6):
    """One pre-norm sublayer drawn off the residual stream at height y: norm, sublayer, add back.
    Returns the y of its residual add."""
    bx = stream_x + 4.2
    c.arrow((stream_x, y), (bx - 0.8, y), key=key)
    c.box(bx, y, 1.6, 0.55, "RMSNorm", "neutral", key=key, fontsize=7.5)
    c.chip(bx + 1.05, y, f"gain {norm}", "LEARNED", key=key, code=(norm,), fontsize=7, ha="left")
    c.arrow((bx, y + 0.28), (bx, y + 0.72), key=key)
    c.box(bx, y + 1.2, box_w, 0.95, box_text, role, key=key, code=code, fontsize=8.5)
    if params:
        c.chip(bx + box_w / 2 + 0.2, y + 0.55, params, "LEARNED", key=key, fontsize=7, ha="left")
    add = y + 2.1
    c.line([(bx, y + 1.68), (bx, add), (stream_x + 0.2, add)], role=role, key=key)
    c.plus(stream_x, add, key=key)
    return add


def decoder_block():
    """One pre-norm decoder block: the residual stream on the left, three sublayers branching off it."""
    c = Canvas(15.0, 10.6, scale=0.55)
    sx = 2.2
    c.text(7.5, 10.25, "One decoder block (DecoderBlock), pre-norm", ha="center", va="center", fontsize=10.5,
           weight="bold")
    c.text(sx, 0.95, "x (B, m, d_model)", ha="center", va="center", fontsize=8, color=COLORS["target"],
           weight="bold")
    c.text(sx - 0.15, 9.7, "output (B, m, d_model), and cross_weights (B, h, m, n) for plotting", ha="left",
           va="center", fontsize=8, color=COLORS["target"], weight="bold")
    c.line([(sx, 1.2), (sx, 9.45)], role="target", lw=2.2, arrow_at_end=True)
    c.text(sx - 0.25, 5.3, "residual stream", rotation=90, ha="right", va="center", fontsize=8, style="italic",
           color=COLORS["target"])
    y1 = _sublayer(c, 1.7, "norm1_gamma", "self_attn: masked self-attention\nsoftmax(QKᵀ/√d_k + mask) V",
                   "target", "W_q W_k W_v W_o", code=("self_attn", "W_q", "W_k", "W_v", "W_o"))
    c.chip(10.9, 2.9, "rule: causal\n+ target padding", "CONFIG", fontsize=6.8, ha="left")
    c.arrow((10.85, 2.9), (8.75, 2.9), "self_attn_mask\n(B, 1, m, m)", label_side="above", fontsize=6.5,
            label_pos=0.5, code=("self_attn_mask",))
    y2 = _sublayer(c, y1 + 0.45, "norm2_gamma", "cross_attn: cross-attention\nQ from RMSNorm(x), K and V from H_enc",
                   "cross", "W_q W_k W_v W_o", code=("cross_attn",))
    c.arrow((14.6, y1 + 1.65), (8.7, y1 + 1.65), "H_enc (B, n, d_model) from the encoder", role="cross",
            label_side="above", label_pos=0.45, fontsize=7)
    c.chip(10.9, y1 + 2.45, "rule: hide\nsource pads", "CONFIG", fontsize=6.8, ha="left")
    c.arrow((10.85, y1 + 2.45), (8.75, y1 + 1.95), "cross_attn_mask\n(B, 1, 1, n)", label_side="above",
            fontsize=6.5, label_pos=0.45, code=("cross_attn_mask",))
    _sublayer(c, y2 + 0.45, "norm3_gamma", "ffn: feed-forward\nGELU(x W1 + b1) W2 + b2", "target",
              "W1 b1 W2 b2", code=("ffn", "W1", "b1", "W2", "b2"))
    c.legend(y=0.3)
    return c.finish(
        "One pre-norm decoder block. The input x runs up a residual stream. Three sublayers branch off it in "
        "order, each reading an RMSNorm of the stream (gains norm1_gamma, norm2_gamma, norm3_gamma) and adding "
        "its result back: masked causal self-attention, cross-attention whose keys and values come from the "
        "encoder output H_enc, and the feed-forward network. The block returns the stream and the "
        "cross-attention weights.")


# -- decoder-only beside encoder-decoder (Lesson 3) ---------------------------------------------------------
def _stack(c, x, y0, sublayers, label, role, key=None, width=3.6):
    """A stack drawn as its block's sublayers in a frame; returns (top y, the boxes' centre ys)."""
    h = 0.72
    top = y0 + 0.35 + len(sublayers) * (h + 0.3) + 0.5
    c.frame(x - width / 2 - 0.25, y0, x + width / 2 + 0.25, top, role, label=label, label_at="top")
    ys, y = [], y0 + 0.35 + h / 2
    for text, r, k in sublayers:
        c.box(x, y, width, h, text, r, key=k, fontsize=8)
        ys.append(y)
        y += h + 0.3
    return top, ys


def decoder_only_vs_encoder_decoder():
    """A decoder-only stack next to an encoder-decoder: the difference is one sublayer, cross-attention."""
    c = Canvas(17.6, 9.6, scale=0.5, highlight=frozenset({"cross"}))
    c.text(8.8, 9.25, "Decoder-only beside encoder–decoder: the difference is cross-attention (red)",
           ha="center", va="center", fontsize=10.5, weight="bold")
    # decoder-only
    gx = 2.8
    c.text(gx, 8.5, "decoder-only (GPT, Llama)", ha="center", fontsize=9, weight="bold", color=COLORS["target"])
    c.text(gx, 0.95, "prompt + output so far:\none causal stream (B, T)", ha="center", va="center", fontsize=7.5)
    c.box(gx, 1.95, 3.6, 0.55, "embed (+ positions in GPT-2)", "target", fontsize=7.5)
    top, _ = _stack(c, gx, 2.7, [("masked self-attention (causal)", "target", None),
                                 ("feed-forward", "target", None)], "block × N", "target")
    c.arrow((gx, 2.23), (gx, 3.07))
    c.box(gx, top + 0.55, 3.6, 0.55, "final norm, head → next token", "target", fontsize=8)
    c.arrow((gx, top - 0.5), (gx, top + 0.27))
    # encoder-decoder
    ex, dx = 8.3, 14.6
    c.text((ex + dx) / 2, 8.5, "encoder–decoder (this course; T5, BART)", ha="center", fontsize=9, weight="bold",
           color=COLORS["cross"])
    c.text(8.8, 8.0, "Positions differ between models: this course adds sinusoids to the embedding, GPT-2 and BART "
           "add learned ones;\nT5 adds relative position biases to the attention scores, and Llama rotates the "
           "queries and keys inside attention (RoPE).", ha="center", va="center", fontsize=7, style="italic")
    c.text(ex, 0.95, "source (B, n),\nread all at once", ha="center", va="center", fontsize=7.5)
    c.text(dx, 0.95, "target so far (B, m)", ha="center", va="center", fontsize=7.5)
    c.box(ex, 1.95, 3.6, 0.55, "embed + positions", "source", fontsize=8)
    c.box(dx, 1.95, 3.6, 0.55, "embed + positions", "target", fontsize=8)
    etop, _ = _stack(c, ex, 2.7, [("self-attention (bidirectional)", "source", None),
                                  ("feed-forward", "source", None)], "encoder block × N_enc", "source")
    dtop, ys = _stack(c, dx, 2.7, [("masked self-attention (causal)", "target", None),
                                   ("cross-attention", "cross", "cross"), ("feed-forward", "target", None)],
                      "decoder block × N_dec", "target")
    c.arrow((ex, 2.23), (ex, 3.07))
    c.arrow((dx, 2.23), (dx, 3.07))
    c.box(ex, etop + 0.55, 3.2, 0.55, "final norm → H_enc", "source", fontsize=8)
    c.arrow((ex, etop - 0.5), (ex, etop + 0.27))
    c.line([(ex + 1.6, etop + 0.55), (11.75, etop + 0.55), (11.75, ys[1]), (dx - 1.8, ys[1])], role="cross",
           key="cross", lw=1.6)
    c.text(10.05, etop + 0.78, "H_enc (B, n, d_model)", fontsize=7, color=COLORS["cross"])
    c.box(dx, dtop + 0.55, 3.6, 0.55, "final norm, head → next token", "target", fontsize=8)
    c.arrow((dx, dtop - 0.5), (dx, dtop + 0.27))
    c.legend(y=0.3, items=("STATE",))
    return c.finish(
        "Left: a decoder-only model reads the prompt and its own output as one causal stream; each block has "
        "two sublayers, causal self-attention and feed-forward; GPT-2 adds learned positions to the embedding, "
        "Llama rotates the queries and keys inside attention instead. Right: an encoder-decoder reads the source "
        "bidirectionally in the encoder, and each decoder block has three sublayers: causal self-attention, "
        "cross-attention reading the encoder output H_enc (in red, the only difference), and feed-forward.")


# -- the shared embedding (Lesson 3) ---------------------------------------------------------------------
def shared_embedding(vocab_size=8, d_model=5):
    """One matrix E (V, d_model) used three times: source lookup, target lookup, and the tied head h Eᵀ."""
    c = Canvas(16.0, 7.6, scale=0.55, highlight=frozenset({"E"}))
    c.text(8.0, 7.25, "One shared embedding E, used three times", ha="center", va="center", fontsize=10.5,
           weight="bold")
    # E as a grid of rows (one per token)
    cx, cy, cell = 8.0, 3.75, 0.42
    x0, y0 = cx - d_model * cell / 2, cy - vocab_size * cell / 2
    from matplotlib.patches import Rectangle
    picked_src, picked_tgt = {2, 5}, {1, 6}
    for v in range(vocab_size):
        for j in range(d_model):
            face = "white"
            if v in picked_src:
                face = _tint(COLORS["source"], 0.55)
            if v in picked_tgt:
                face = _tint(COLORS["target"], 0.5)
            c.ax.add_patch(Rectangle((x0 + j * cell, y0 + (vocab_size - 1 - v) * cell), cell, cell, fc=face,
                                     ec="#888888", lw=0.6, zorder=2))
        c.text(x0 - 0.12, y0 + (vocab_size - 1 - v + 0.5) * cell, f"token {v}", ha="right", va="center",
               fontsize=6.5)
    c.ax.add_patch(Rectangle((x0, y0), d_model * cell, vocab_size * cell, fill=False, ec=COLORS["highlight"],
                             lw=2.4, zorder=3))
    c.text(cx, y0 - 0.35, "embedding E (V, d_model) [LEARNED]", ha="center", va="center", fontsize=8,
           weight="bold", color=COLORS["highlight"])
    c._code(("embedding",))
    c.box(2.5, 5.7, 4.2, 1.0, "source lookup: rows of src\nE[src] · √d_model  (B, n, d_model)", "source",
          fontsize=8)
    c.box(2.5, 1.8, 4.2, 1.0, "target lookup: rows of tgt_in\nE[tgt_in] · √d_model  (B, m, d_model)", "target",
          fontsize=8)
    c.box(13.4, 3.75, 4.4, 1.2, "tied output head\nlogits = h Eᵀ  (B, m, V)\none score per row of E", "target",
          fontsize=8)
    c.arrow((x0 - 1.15, y0 + 5.5 * cell), (4.65, 5.5), role="source")
    c.arrow((x0 - 1.15, y0 + 1.5 * cell), (4.65, 2.0), role="target")
    c.arrow((x0 + d_model * cell + 0.1, cy), (11.15, 3.75), "all V rows", label_side="above", fontsize=7)
    c.text(13.4, 2.75, "h: the decoder's states after\nits final norm (B, m, d_model)", ha="center", va="top",
           fontsize=6.8, style="italic")
    c.text(8.0, 0.9, "sharing is a [CONFIG] choice: one V × d_model matrix instead of three", ha="center",
           fontsize=7.5, style="italic")
    c.legend(y=0.3, items=("STATE",))
    return c.finish(
        "One embedding matrix E, with one row per token of the vocabulary, is used three times: its rows for "
        "the source tokens and for the target tokens are looked up (and scaled by the square root of d_model), "
        "and the tied output head scores each decoder state against every row, logits = h E^T.")


# -- matrices drawn as grids of cells ---------------------------------------------------------------------
def _grid(c, x, y, rows, cols, colors, cell=0.36, label=None, label_below=None, key=None, edge="#777777"):
    """A (rows, cols) matrix with its top-left corner at (x, y); colors[i][j] fills each cell."""
    from matplotlib.patches import Rectangle
    faded = c._faded(key)
    for i in range(rows):
        for j in range(cols):
            face = colors[i][j] if not faded else _tint(colors[i][j], 0.6)
            c.ax.add_patch(Rectangle((x + j * cell, y - (i + 1) * cell), cell, cell, fc=face, ec=edge, lw=0.5,
                                     zorder=2))
    if label:
        c.text(x + cols * cell / 2, y + 0.2, label, ha="center", va="bottom", fontsize=7.5, key=key)
    if label_below:
        c.text(x + cols * cell / 2, y - rows * cell - 0.15, label_below, ha="center", va="top", fontsize=7,
               key=key, color="#555555")
    return x + cols * cell, y - rows * cell


def _head_colors(n_heads):
    """One colour per head: tints of the source colour, light to dark, so heads stay apart in grey too."""
    return [_tint(COLORS["source"], a) for a in np.linspace(0.75, 0.15, n_heads)]


def multi_head_split(T=3, d_model=8, n_heads=2):
    """Multi-head attention's split and merge, with shapes: (T, d_model) -> (h, T, d_k) -> (T, d_model)."""
    from ..attention import merge_heads, split_heads
    d_k = d_model // n_heads
    x = np.zeros((T, d_model))
    split_shape = split_heads(x, n_heads).shape  # (h, T, d_k): shapes come from the library itself
    reshaped_shape = x.reshape(T, n_heads, d_k).shape
    merged_shape = merge_heads(split_heads(x, n_heads)).shape
    head_colors = _head_colors(n_heads)
    cell = 0.34
    c = Canvas(17.0, 7.4, scale=0.55)
    c._code(("split_heads", "merge_heads", "scaled_dot_product_attention", "W_o", "n_heads", "d_k", "d_model"))
    c.text(8.5, 7.05, f"Multi-head attention: split into {n_heads} heads, attend in each, merge "
           f"(T = {T}, d_model = {d_model}, n_heads = {n_heads}, d_k = {d_k})", ha="center", va="center",
           fontsize=10, weight="bold")
    # Q = x W_q: each head owns d_k consecutive columns
    cols = [[head_colors[j // d_k] for j in range(d_model)] for _ in range(T)]
    right, _ = _grid(c, 0.5, 5.6, T, d_model, cols, cell, label=f"Q = x @ W_q  {(T, d_model)}",
                     label_below="head k owns columns\nk·d_k … (k+1)·d_k − 1")
    c.arrow((right + 0.15, 5.05), (right + 1.15, 5.05), "reshape", label_side="above", fontsize=7)
    # reshape: (T, h, d_k), drawn as T rows of h small blocks
    x0 = right + 1.35
    for t in range(T):
        for k in range(n_heads):
            _grid(c, x0 + k * (d_k * cell + 0.12), 5.6 - t * (cell + 0.12), 1, d_k, [[head_colors[k]] * d_k], cell)
    c.text(x0 + n_heads * (d_k * cell + 0.12) / 2, 5.8, f"{reshaped_shape}", ha="center", va="bottom", fontsize=7.5)
    right = x0 + n_heads * (d_k * cell + 0.12)
    c.arrow((right + 0.1, 5.05), (right + 1.2, 5.05), "swapaxes(-2, -3)", label_side="above", fontsize=7)
    # (h, T, d_k): one matrix per head
    x0 = right + 1.4
    for k in range(n_heads):
        _grid(c, x0 + k * (d_k * cell + 0.4), 5.6, T, d_k, [[head_colors[k]] * d_k] * T, cell,
              label_below=f"head {k}")
    c.text(x0 + n_heads * (d_k * cell + 0.4) / 2, 5.8, f"{split_shape}  = split_heads(Q, {n_heads})",
           ha="center", va="bottom", fontsize=7.5)
    # attention in every head at once
    c.box(8.5, 3.1, 9.6, 0.75, f"scaled_dot_product_attention in every head at once: weights {(n_heads, T, T)}, "
          f"scaled by √d_k = √{d_k}", "source", fontsize=8)
    c.arrow((x0 + 1.0, 4.1), (x0 + 1.0, 3.5))
    c.arrow((4.0, 2.7), (4.0, 2.15), f"heads' outputs {split_shape}", label_side="right", fontsize=7)
    # merge: back to (T, d_model), heads side by side, then W_o mixes them
    right, _ = _grid(c, 1.0, 2.0, T, d_model, cols, cell,
                     label_below=f"merge_heads: swap back, reshape → {merged_shape}")
    c.arrow((right + 0.15, 1.45), (right + 1.4, 1.45), "@ W_o", label_side="above", fontsize=7.5)
    mixed = [[_tint(COLORS["source"], 0.45)] * d_model for _ in range(T)]
    right, _ = _grid(c, right + 1.6, 2.0, T, d_model, mixed, cell,
                     label_below=f"output {merged_shape}: W_o mixes the heads")
    c.chip(right + 0.4, 1.45, "W_q W_k W_v W_o (d_model, d_model)", "LEARNED", fontsize=7, ha="left")
    c.chip(right + 0.4, 2.25, f"n_heads = {n_heads}", "CONFIG", fontsize=7, ha="left")
    c.text(x0 + n_heads * (d_k * cell + 0.4) + 0.1, 5.75, "a bare reshape to (h, T, d_k) would\nput the first "
           "T·d_k numbers of Q\ninto head 0, mixing tokens; after\nthe swap, row t of every head\n"
           "comes from token t",
           fontsize=6.8, style="italic", color=COLORS["highlight"], va="top")
    c.legend(y=0.3)
    fig = c.finish(
        f"Multi-head split and merge with T = {T} tokens, d_model = {d_model} and {n_heads} heads of width d_k = "
        f"{d_k}. The queries Q (T, d_model) are reshaped to {reshaped_shape} and the middle axes swapped, giving "
        f"{split_shape}: head k gets columns k*d_k to (k+1)*d_k - 1 of every token. Attention runs in every "
        f"head at once; merging swaps back and reshapes to {merged_shape}, and W_o mixes the heads.")
    return fig


def _masked_cell(c, x, y, cell):
    from matplotlib.patches import Rectangle
    c.ax.add_patch(Rectangle((x, y), cell, cell, fc=COLORS["masked"], ec="#777777", lw=0.5, zorder=2))
    c.ax.add_patch(Rectangle((x, y), cell, cell, fill=False, hatch="///", ec="#9A9A9A", lw=0, zorder=2.5))


# -- cross-attention's data flow (Lesson 4) ------------------------------------------------------------------
def cross_attention_flow(m=4, n=6, n_pads=2):
    """Cross-attention: queries from the decoder (m rows), keys and values from H_enc (n rows), m x n weights."""
    cell = 0.36
    tgt, src, cross = (_tint(COLORS[r], a) for r, a in (("target", 0.45), ("source", 0.55), ("cross", 0.55)))
    c = Canvas(17.0, 9.6, scale=0.55)
    c._code(("cross_attn", "W_q", "W_k", "W_v", "W_o", "padding_mask", "norm2_gamma"))
    c.text(8.5, 9.25, f"Cross-attention: m = {m} target positions ask, n = {n} source positions answer",
           ha="center", va="center", fontsize=10.5, weight="bold")
    # the decoder side: the block's states, normalised first (pre-norm), then projected
    _grid(c, 1.0, 8.3, m, 5, [[tgt] * 5] * m, cell, label="RMSNorm(x) (m, d_model)")
    c.arrow((2.9, 7.6), (3.45, 7.6), "@ W_q", label_side="above", fontsize=7.5, role="target")
    c.box(1.9, 6.3, 1.5, 0.5, "RMSNorm", "neutral", fontsize=7.5)
    c.chip(2.85, 6.3, "gain norm2_gamma", "LEARNED", fontsize=7, ha="left")
    c.arrow((1.9, 6.55), (1.9, 6.82), role="target")
    c.text(1.9, 5.5, "decoder states x (m, d_model)", ha="center", va="center", fontsize=7.5)
    c.arrow((1.9, 5.68), (1.9, 6.05), role="target")
    _grid(c, 3.6, 8.3, m, 3, [[tgt] * 3] * m, cell, label="Q (m, d_k)")
    # the encoder side, computed once
    _grid(c, 14.2, 8.3, n, 5, [[src] * 5] * n, cell, label="H_enc (n, d_model)")
    _grid(c, 11.2, 8.3, n, 3, [[src] * 3] * n, cell, label="K (n, d_k)")
    _grid(c, 11.2, 5.1, n, 3, [[src] * 3] * n, cell, label="V (n, d_v)")
    c.arrow((14.05, 7.5), (12.45, 7.5), "@ W_k", label_side="above", fontsize=7.5, role="source")
    c.arrow((14.05, 6.6), (12.45, 4.3), "@ W_v", label_side="left", fontsize=7.5, role="source", label_pos=0.35)
    c.text(15.3, 5.3, "K and V depend only on H_enc:\ncomputed once per source\nsentence, reused at every\n"
           "decoding step", ha="center", va="top", fontsize=7, style="italic", color=COLORS["source"])
    # scores and weights: m x n, source pads hidden
    sx, sy = 5.6, 6.5
    for i in range(m):
        for j in range(n):
            if j >= n - n_pads:
                _masked_cell(c, sx + j * cell, sy - (i + 1) * cell, cell)
            else:
                _grid(c, sx + j * cell, sy - i * cell, 1, 1, [[cross]], cell)
    c.text(sx + n * cell / 2, sy + 0.75, "weights (m, n) = softmax(Q Kᵀ / √d_k + mask)", ha="center", va="bottom",
           fontsize=7.5, weight="bold", color=COLORS["cross"])
    c.text(sx + n * cell + 0.2, sy - m * cell / 2, "each row sums\nto 1 over\nthe source", va="center",
           fontsize=7, color="#333333")
    c.text(sx - 0.2, sy - m * cell - 0.45, "rectangular: m and n may differ.\nHatched: source pads,\n"
           "hidden by padding_mask,\none row for all m queries", ha="right", va="top", fontsize=7, color="#555555")
    c.arrow((4.2, 6.75), (sx + 0.3, sy + 0.08), role="target")
    c.arrow((11.05, 7.2), (sx + n * cell - 0.2, sy + 0.08), "Kᵀ", role="source", label_side="above",
            fontsize=7.5, label_pos=0.55)
    # output
    ox, oy = 6.2, 3.9
    _grid(c, ox, oy, m, 3, [[cross] * 3] * m, cell)
    c.text(ox - 0.2, oy - m * cell / 2, "weights @ V\n(m, d_v)", ha="right", va="center", fontsize=7.5)
    c.arrow((sx + 1.0, sy - m * cell - 0.05), (ox + 0.5, oy + 0.05), role="cross")
    c.arrow((11.05, 3.6), (ox + 3 * cell + 0.1, oy - 0.7), "V", role="source", label_side="above",
            fontsize=7.5, label_pos=0.5)
    c.arrow((ox + 0.55, oy - m * cell - 0.05), (ox + 0.55, 1.55), "merge heads, @ W_o", label_side="right",
            fontsize=7, role="target")
    c.box(ox + 0.55, 1.2, 4.4, 0.62, "output (m, d_model): added to\nthe decoder's residual stream", "target",
          fontsize=7.5)
    c.chip(13.6, 2.2, "W_q W_k W_v W_o of cross_attn\n(d_model, d_model) each", "LEARNED", fontsize=7)
    c.chip(13.6, 1.2, "no causal mask here: every target\nposition may read the whole source", "CONFIG",
           fontsize=7)
    c.legend(y=0.3)
    return c.finish(
        f"Cross-attention with m = {m} target positions and n = {n} source positions. Queries come from the "
        f"decoder states, normalised by RMSNorm with the gain norm2_gamma, through W_q; keys and values come from the encoder output H_enc through W_k and W_v, "
        f"computed once per source sentence. The weights form a rectangular m by n matrix; the last {n_pads} "
        f"source columns are padding, hidden by the source padding mask, and every row sums to 1 over the "
        f"source. The weighted values are merged and projected by W_o and added to the decoder's stream.")


# -- pre-norm and post-norm (Lesson 5) -----------------------------------------------------------------------
def pre_norm_vs_post_norm():
    """One sublayer, two arrangements: x + F(Norm(x)) beside Norm(x + F(x))."""
    c = Canvas(15.0, 8.4, scale=0.55)
    c._code(("decoder_block_post_norm",))
    c.text(7.5, 8.05, "One sublayer F, two places for the norm", ha="center", va="center", fontsize=10.5,
           weight="bold")
    for x0, title in ((1.5, "pre-norm (this course): x + F(RMSNorm(x))"),
                      (9.0, "post-norm (2017): RMSNorm(x + F(x))")):
        c.text(x0 + 2.2, 7.35, title, ha="center", fontsize=9, weight="bold", color="#1A1A1A")
    # pre-norm: the stream itself is never normalised
    sx = 2.0
    c.line([(sx, 1.2), (sx, 6.8)], role="highlight", lw=2.4)
    c.text(sx, 0.95, "x", ha="center", va="center", fontsize=9, weight="bold")
    c.text(sx, 7.0, "out", ha="center", va="center", fontsize=9, weight="bold")
    c.arrow((sx, 2.0), (4.1, 2.0))
    c.box(4.9, 2.0, 1.6, 0.6, "RMSNorm", "neutral", fontsize=8)
    c.arrow((4.9, 2.3), (4.9, 3.25))
    c.box(4.9, 3.7, 1.9, 0.8, "F: attention\nor FFN", "target", fontsize=8)
    c.line([(4.9, 4.1), (4.9, 5.2), (sx + 0.2, 5.2)], role="target")
    c.plus(sx, 5.2)
    c.text(sx - 0.25, 3.6, "identity path: the stream\nis never normalised", rotation=90, ha="right",
           va="center", fontsize=7, style="italic", color=COLORS["highlight"])
    c.text(3.0, 6.2, "nothing on the stream normalises it:\na final RMSNorm ends the stack", fontsize=7, style="italic")
    # post-norm: the norm sits on the stream
    px = 9.5
    c.line([(px, 1.2), (px, 5.0)], role="neutral", lw=2.0, arrow_at_end=False)
    c.text(px, 0.95, "x", ha="center", va="center", fontsize=9, weight="bold")
    c.arrow((px, 2.0), (11.6, 2.0))
    c.box(12.4, 3.0, 1.9, 0.8, "F: attention\nor FFN", "target", fontsize=8)
    c.line([(11.6, 2.0), (12.4, 2.0), (12.4, 2.6)], role="neutral")
    c.line([(12.4, 3.4), (12.4, 4.2), (px + 0.2, 4.2)], role="target")
    c.plus(px, 4.2)
    c.line([(px, 4.4), (px, 5.1)], role="neutral", lw=2.0)
    c.box(px, 5.45, 1.6, 0.6, "RMSNorm", "neutral", fontsize=8, key="post")
    c.ax.patches[-1].set_edgecolor(COLORS["highlight"])
    c.ax.patches[-1].set_linewidth(2.4)
    c.line([(px, 5.75), (px, 6.8)], role="neutral", lw=2.0)
    c.text(px, 7.0, "out", ha="center", va="center", fontsize=9, weight="bold")
    c.text(px + 1.0, 5.6, "the norm sits on the stream:\nevery path from x to out\ngoes through it "
           "(decoder_block_post_norm)",
           fontsize=7, style="italic", color=COLORS["highlight"], va="center")
    c.chip(7.5, 1.25, "norm gains γ: one per sublayer", "LEARNED", fontsize=7)
    c.legend(y=0.3)
    return c.finish(
        "Left, pre-norm: the sublayer F reads an RMSNorm of the stream x and its output is added back to x, so "
        "the stream itself is never normalised and an identity path (red) runs from input to output; a final "
        "RMSNorm ends the stack. Right, post-norm (2017): F reads x directly, and the sum x + F(x) is normalised, "
        "so the norm (red) sits on the stream and every path passes through it.")


# -- one training step (Lesson 8) -------------------------------------------------------------------------
def training_step():
    """One teacher-forced training step as a loop: batch, forward, loss, backward, clip, Adam, update."""
    c = Canvas(19.6, 8.4, scale=0.52)
    c._code(("shift_right", "forward_with_cache", "softmax_cross_entropy", "backward", "clip_grad_norm", "Adam",
             "warmup_schedule", "train_step"))
    c.text(9.8, 8.05, "One training step (train_step): every target position trained in one pass",
           ha="center", va="center", fontsize=10.5, weight="bold")
    top, bottom = 5.7, 2.7
    xs = (1.7, 5.8, 10.4, 16.1)  # box centres, both rows: batch/params, shift_right/Adam, forward/clip, loss/backward
    ws = (2.8, 3.6, 3.6, 5.0)
    c.box(xs[0], top, ws[0], 1.0, "batch\nsrc (B, n)\ntargets (B, m)", "neutral", fontsize=8)
    c.box(xs[1], top, ws[1], 1.0, "shift_right\ntgt_in = <bos>, targets[:, :-1]\n(teacher forcing)", "target",
          fontsize=7.5)
    c.box(xs[2], top, ws[2], 1.0, "forward_with_cache\nlogits and the activations\nthe backward pass needs",
          "target", fontsize=7.5)
    c.box(xs[3], top, ws[3], 1.0, "loss: sequence_cross_entropy (Exercise 8.1;\nthe library's softmax_cross_entropy):"
          "\nmean over the N real tokens, dlogits = (p̂ − q) / N", "neutral", fontsize=7)

    def right_edge(i):
        return xs[i] + ws[i] / 2

    def left_edge(i):
        return xs[i] - ws[i] / 2

    # the data: targets into shift_right, tgt_in into the forward pass, logits into the loss
    c.arrow((right_edge(0), top), (left_edge(1), top), "targets\n(B, m)", label_side="above", fontsize=6.5,
            label_offset=0.08)
    c.arrow((right_edge(1), top), (left_edge(2), top), "tgt_in\n(B, m)", label_side="above", fontsize=6.5,
            label_offset=0.08)
    c.arrow((right_edge(2), top), (left_edge(3), top), "logits\n(B, m, V)", label_side="above", fontsize=6.5,
            label_offset=0.08)
    # src goes to the encoder inside the forward pass; the targets themselves go to the loss
    c.line([(xs[0] + 0.6, top - 0.5), (xs[0] + 0.6, 4.75), (xs[2] - 0.7, 4.75), (xs[2] - 0.7, top - 0.5)])
    c.text((xs[0] + xs[2]) / 2, 4.88, "src (B, n)", ha="center", va="bottom", fontsize=6.5, color="#333333")
    c.line([(xs[0], top + 0.5), (xs[0], 7.25), (left_edge(3) + 0.4, 7.25), (left_edge(3) + 0.4, top + 0.5)])
    c.text(7.0, 7.38, "targets (B, m): what the loss compares the logits with", ha="center", va="bottom",
           fontsize=6.5, color="#333333")
    c.box(xs[3], bottom, ws[3], 1.0, "backward\ngrads: one per [LEARNED] array,\nsame names and shapes", "neutral",
          fontsize=7.5)
    c.arrow((xs[3], top - 0.5), (xs[3], bottom + 0.5), "dlogits (B, m, V)", label_side="right", fontsize=6.8)
    c.box(xs[2], bottom, ws[2], 1.0, "clip_grad_norm (optional)\nscale all grads together\nif their norm > max_norm",
          "neutral", fontsize=7.5)
    c.arrow((left_edge(3), bottom), (right_edge(2), bottom), "grads", label_side="above", fontsize=6.5,
            label_offset=0.08)
    c.box(xs[1], bottom, ws[1], 1.0, "Adam step\nlr = warmup_schedule(t)\nm, v, t [STATE] kept across steps",
          "neutral", fontsize=7.2)
    c.arrow((left_edge(2), bottom), (right_edge(1), bottom), "grads", label_side="above", fontsize=6.5,
            label_offset=0.08)
    c.box(xs[0], bottom, ws[0], 1.0, "parameters\nupdated in place", "neutral", fontsize=8)
    c.arrow((left_edge(1), bottom), (right_edge(0), bottom))
    c.line([(xs[0], bottom + 0.5), (xs[0], 4.2), (xs[2] + 0.7, 4.2), (xs[2] + 0.7, top - 0.5)], dashed=True)
    c.text(xs[1], 4.03, "the next step's forward pass uses the new values", ha="center", va="top", fontsize=7,
           style="italic")
    c.chip(xs[2], 6.75, "dropout rate (train mode only)", "CONFIG", fontsize=7)
    c.chip(xs[3] + 1.1, 6.75, "label smoothing ε, pad id", "CONFIG", fontsize=7)
    c.chip(xs[2], 1.55, "max_norm", "CONFIG", fontsize=7)
    c.chip(xs[1], 1.55, "schedule: peak, warm-up; betas, eps", "CONFIG", fontsize=7)
    c.chip(xs[0], 1.55, "weights, gains, E", "LEARNED", fontsize=7)
    c.legend(y=0.45)
    return c.finish(
        "One training step. A batch of sources and targets; the targets are shifted right behind <bos> to make "
        "the decoder's input (teacher forcing); one forward pass reads the sources and that input and gives the "
        "logits of every position; the loss (the student's sequence_cross_entropy, the library's "
        "softmax_cross_entropy) compares them with the targets, averages the cross-entropy over the real target "
        "tokens and gives dlogits; the backward pass gives one gradient per parameter; the gradients may be "
        "clipped by their global norm; Adam, whose moments m and v and step count t persist from step to step, "
        "updates the parameters in place with this step's learning rate from the warm-up schedule, and the next "
        "step starts from the new values.")


# -- the KV cache (Lesson 9) -----------------------------------------------------------------------------
def kv_cache(steps=4, n=5):
    """Decoding with a KV cache: one new position per step, its K and V rows appended, cross K/V computed once."""
    cell = 0.34
    tgt, src, new = _tint(COLORS["target"], 0.5), _tint(COLORS["source"], 0.55), _tint(COLORS["highlight"], 0.35)
    c = Canvas(17.0, 8.2, scale=0.55)
    c._code(("KVCache", "decode_step"))
    c.text(8.5, 7.85, "The KV cache (KVCache, decode_step): each step feeds one new token, appends one row of K and V",
           ha="center", va="center", fontsize=10.5, weight="bold")
    # computed once
    _grid(c, 0.4, 6.6, n, 3, [[src] * 3] * n, cell, label="cross K", label_below="(n, d_k)")
    _grid(c, 1.9, 6.6, n, 3, [[src] * 3] * n, cell, label="cross V", label_below="(n, d_v)")
    c.text(1.6, 4.2, "from H_enc, computed\nonce per sentence\n(per block), reused\nat every step",
           ha="center", va="top", fontsize=7, style="italic", color=COLORS["source"])
    x = 4.3
    for t in range(1, steps + 1):
        c.text(x + 1.0, 7.1, f"step {t}", ha="center", fontsize=9, weight="bold")
        rows = [[tgt] * 3 for _ in range(t - 1)] + [[new] * 3]
        _grid(c, x, 6.6, t, 3, rows, cell, label="K" if t == 1 else None)
        _grid(c, x + 1.3, 6.6, t, 3, rows, cell, label="V" if t == 1 else None)
        c.text(x + 1.0, 6.6 - steps * cell - 0.25, f"self-attention cache:\n{t} row{'s' if t > 1 else ''} "
               f"(newest in red)", ha="center", va="top", fontsize=6.8)
        _grid(c, x + 0.5, 3.2, 1, 3, [[new] * 3], cell, label="q (1, d_k)")
        c.text(x + 1.0, 2.65, f"1 query × {t} key{'s' if t > 1 else ''}\n+ 1 query × n cross keys",
               ha="center", va="top", fontsize=6.8)
        c.text(x + 1.0, 1.45, "input: <bos>" if t == 1 else f"input: token {t - 1}",
               ha="center", va="center", fontsize=7, color=COLORS["target"], weight="bold")
        c.arrow((x + 1.0, 1.7), (x + 1.0, 2.05), role="target")
        if t < steps:
            c.arrow((x + 2.4, 5.2), (x + 2.95, 5.2), role="target")
        x += 3.15
    c.text(8.5, 0.85, "without the cache, step t recomputes all t positions of every block: "
           "1 + 2 + … + L = L(L + 1)/2 positions for L steps, instead of L", ha="center", fontsize=7.5,
           style="italic")
    c.legend(y=0.3, items=("STATE",))
    return c.finish(
        f"Greedy decoding with a KV cache over {steps} steps. Each step feeds only the newest token: its query "
        f"attends to the cached keys of every earlier position plus its own, and its key and value rows (red) "
        f"are appended to the cache, which grows by one row per step. The cross-attention keys and values come "
        f"from H_enc and are computed once per sentence. Without the cache every step would recompute all "
        f"earlier positions.")


# -- the figures the lessons embed ---------------------------------------------------------------------------
def lesson_figures():
    """{file stem: (function, kwargs)} for every diagram the lessons show as a picture."""
    figures = {f"course_map_{k:02d}": (course_map, {"lesson": k}) for k in MAP_PARTS}
    figures.update({
        "decoder_block": (decoder_block, {}),
        "decoder_only_vs_encoder_decoder": (decoder_only_vs_encoder_decoder, {}),
        "shared_embedding": (shared_embedding, {}),
        "multi_head_split": (multi_head_split, {}),
        "cross_attention_flow": (cross_attention_flow, {}),
        "pre_norm_vs_post_norm": (pre_norm_vs_post_norm, {}),
        "training_step": (training_step, {}),
        "kv_cache": (kv_cache, {}),
    })
    return figures


SVG_STYLE = {"svg.fonttype": "none", "svg.hashsalt": "encdec", "font.family": ["DejaVu Sans", "sans-serif"]}


def svg_bytes(fig):
    """The figure as SVG text, byte for byte the same on every run (no date, fixed ids, text kept as text)."""
    import io
    buffer = io.StringIO()
    with _plt().rc_context(SVG_STYLE):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue().encode()


def render_all(folder):
    """Write every lesson figure to folder/<name>.svg; returns {name: alt text}."""
    from pathlib import Path
    plt = _plt()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    alts = {}
    for name, (function, kwargs) in lesson_figures().items():
        with plt.rc_context(SVG_STYLE):
            fig = function(**kwargs)
        (folder / f"{name}.svg").write_bytes(svg_bytes(fig))
        alts[name] = fig.alt_text
        plt.close(fig)
    return alts
