"""The probes of Exercises 5.2 and 5.3: the kinds of slip a decoder block's answer may show (a norm or a
residual missing, swapped gains, a mask sent to the wrong sublayer, one attention layer doing both
jobs, the residual taken from the normalised input, an output normalised again, a leak of the future).
"""

import numpy as np

from ... import layers
from ..probes import Calls, Causal, Missing, NotFinite, Probes, Swapped, Variants


# -- probes: the kinds of slip each exercise's answer may show (encdec.checks.probes) -------------------------
def decoder_block_model(k, x, encoder_output, self_attn_mask=None, cross_attn_mask=None, *, post_norm=False):
    """DecoderBlock.__call__ (or decoder_block_post_norm) with knobs: without={"norm1", "norm2", "norm3",
    "residual_self", "residual_cross", "residual_ffn"}; residual_from_norm (pre-norm: the residual named
    adds the sublayer's output to the normalised input instead of to x); output_norm (pre-norm: the output
    normalised again, with the gain named, or "none" for a gain of ones). k.obj is the block (norm gains changed by the probe)."""
    b = k.obj
    x = np.asarray(x, dtype=np.float64)

    def norm(v, which):
        return v if k.drops(which) else layers.rms_norm(v, getattr(b, which + "_gamma"), b.eps)

    def sublayer(x, which, residual, run):
        if post_norm:
            out = run(x)
            return norm(out if k.drops(residual) else x + out, which)
        h = norm(x, which)
        out = run(h)
        return out if k.drops(residual) else (h if k.get("residual_from_norm") == residual else x) + out

    cross = {}

    def cross_attention(h):
        out, cross["weights"] = b.cross_attn(h, key_value_input=encoder_output, mask=cross_attn_mask)
        return out

    x = sublayer(x, "norm1", "residual_self", lambda h: b.self_attn(h, mask=self_attn_mask)[0])
    x = sublayer(x, "norm2", "residual_cross", cross_attention)
    x = sublayer(x, "norm3", "residual_ffn", b.ffn)
    if k.get("output_norm"):  # a norm the block does not have, applied to its output
        gain = np.ones(b.d_model) if k["output_norm"] == "none" else getattr(b, k["output_norm"] + "_gamma")
        x = layers.rms_norm(x, gain, b.eps)
    return x, cross["weights"]


def _post_norm_model(k, block, *args):
    return decoder_block_model(k, *args, post_norm=True)


def _same(a, b):
    if a is None or b is None:
        return False
    if a is b:
        return True
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def _mask_of(call):
    args, kwargs = call
    return kwargs["mask"] if "mask" in kwargs else (args[2] if len(args) > 2 else None)


CAUSAL_TO_CROSS = (
    "the causal mask (self_attn_mask) is passed to cross-attention: the causal mask sent to the wrong sublayer. "
    "Cross-attention scores target positions against source positions, (..., h, m, n), and every target "
    "position may read the whole source: pass mask=cross_attn_mask (the source padding mask) to cross_attn, "
    "and keep self_attn_mask for self_attn.")
ONE_LAYER = (
    "one attention layer, %s, does the work of both: self-attention and cross-attention each have their own "
    "weights [LEARNED] (W_q, W_k, W_v, W_o). Self-attention is self.self_attn(rms_norm(x, norm1_gamma), "
    "mask=self_attn_mask); cross-attention is self.cross_attn(rms_norm(x, norm2_gamma), encoder_output, "
    "mask=cross_attn_mask). The layer %s is never used.")
CROSS_TO_SELF = (
    "the source padding mask (cross_attn_mask) is passed to self-attention, so the target positions are not "
    "hidden from the ones before them. Self-attention takes self_attn_mask (the causal mask, plus target "
    "padding); cross-attention takes cross_attn_mask.")


def mask_judge(offset):
    """What the block's sublayers received, judged: the causal mask sent to cross-attention, or the source
    padding mask to self-attention. offset: where x sits among the case args (1 when the block comes first)."""
    def judge(calls, args, kwargs):
        inputs = list(args[offset:offset + 4]) + [None] * 4
        self_mask = kwargs.get("self_attn_mask", inputs[2])
        cross_mask = kwargs.get("cross_attn_mask", inputs[3])
        n_self, n_cross = len(calls["self_attn"]), len(calls["cross_attn"])
        if n_self == 0 and n_cross >= 2:
            return ("one_layer_for_both", ONE_LAYER % ("cross_attn", "self_attn"),
                    f"cross_attn was called {n_cross} times and self_attn never.")
        if n_cross == 0 and n_self >= 2:
            return ("one_layer_for_both", ONE_LAYER % ("self_attn", "cross_attn"),
                    f"self_attn was called {n_self} times and cross_attn never.")
        if calls["cross_attn"]:
            got = _mask_of(calls["cross_attn"][0])
            if _same(got, self_mask) and not _same(got, cross_mask):
                return ("causal_to_cross", CAUSAL_TO_CROSS,
                        f"cross_attn received a mask of shape {np.shape(got)}, self_attn_mask itself.")
        if calls["self_attn"]:
            got = _mask_of(calls["self_attn"][0])
            if _same(got, cross_mask) and not _same(got, self_mask):
                return ("cross_to_self", CROSS_TO_SELF,
                        f"self_attn received a mask of shape {np.shape(got)}, cross_attn_mask itself.")
        return None
    return judge


DECODER_PARTS = {
    "norm1": ("the first norm (norm1_gamma, before self-attention)", "Self-attention reads rms_norm(x, norm1_gamma)."),
    "norm2": ("the second norm (norm2_gamma, before cross-attention)",
              "Cross-attention's queries come from rms_norm(x, norm2_gamma)."),
    "norm3": ("the third norm (norm3_gamma, before the feed-forward network)",
              "The feed-forward network reads rms_norm(x, norm3_gamma)."),
    "residual_self": ("the residual around self-attention", "x = x + self-attention's output."),
    "residual_cross": ("the residual around cross-attention", "x = x + cross-attention's output."),
    "residual_ffn": ("the residual around the feed-forward network", "x = x + the feed-forward network's output."),
}
POST_NORM_PARTS = {
    "norm1": ("the norm after self-attention (norm1_gamma)", "x = rms_norm(x + self-attention's output, norm1_gamma)."),
    "norm2": ("the norm after cross-attention (norm2_gamma)", "x = rms_norm(x + cross-attention's output, norm2_gamma)."),
    "norm3": ("the norm after the feed-forward network (norm3_gamma)",
              "x = rms_norm(x + ffn(x), norm3_gamma)."),
    "residual_self": ("the residual around self-attention", "Normalise x + self-attention's output."),
    "residual_cross": ("the residual around cross-attention", "Normalise x + cross-attention's output."),
    "residual_ffn": ("the residual around the feed-forward network", "Normalise x + ffn(x)."),
}
NORM_ROLES = {"norm1_gamma": "the gain of the self-attention norm", "norm2_gamma": "the gain of the cross-attention norm",
              "norm3_gamma": "the gain of the feed-forward norm"}


def _causal_case(x, encoder_output, self_attn_mask=None, *rest):
    return self_attn_mask is not None


def decoder_block_probes(block, post_norm=False):
    """The probes of DecoderBlock.__call__ (or of decoder_block_post_norm, whose first argument is the block)."""
    gains = ("norm1_gamma", "norm2_gamma", "norm3_gamma")
    offset = 1 if post_norm else 0
    return Probes(
        _post_norm_model if post_norm else decoder_block_model,
        Calls(("self_attn", "cross_attn"), mask_judge(offset), holder=0 if post_norm else "self", kind="masks"),
        Swapped(gains),
        Missing(POST_NORM_PARTS if post_norm else DECODER_PARTS),
        *([] if post_norm else [Variants("residual_from_norm", [
            (residual, {"residual_from_norm": residual},
             f"{DECODER_PARTS[residual][0]} adds the sublayer's output to its normalised input, "
             f"rms_norm(x, {norm}_gamma) + sublayer(...), instead of to x itself. In a pre-norm block the norm "
             "only feeds the sublayer; the residual stream x goes around it untouched: x = x + sublayer(rms_norm(x)).")
            for norm, residual in (("norm1", "residual_self"), ("norm2", "residual_cross"), ("norm3", "residual_ffn"))]),
            Variants("output_norm", [
                (gain, {"output_norm": gain},
                 "the block's output is normalised again" + ("" if gain == "none" else f" (with {gain}_gamma)")
                 + ". A pre-norm block returns the residual stream as it is, x + ffn(rms_norm(x, norm3_gamma)); the "
                 "one norm after the last block is the decoder's final norm, outside the block.")
                for gain in ("norm3", "norm1", "norm2", "none")])]),
        Causal(edit=(offset,), outputs=lambda v: v[0],
               when=(lambda block, *a: _causal_case(*a)) if post_norm else _causal_case, what="x"),
        NotFinite(),
        obj=block, params=gains, roles=NORM_ROLES)
