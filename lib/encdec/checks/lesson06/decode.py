"""Exercise 6.4, decode: the knob model of its slips, the scaled logits and its invariants
(DECODE_PROBES: no future position visible, no source pad visible), and the checker."""

import numpy as np

from ...attention import create_causal_mask, padding_mask
from ...layers import rms_norm
from ...mistakes import CATALOG
from ...model import Seq2Seq
from ..core import Checker, rebind
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Combos, Invariant, Probes, Proportional
from .forward_cases import _FORWARD, _other_last, decode_cases


def _decode_model(k, model, tgt_in, H_enc, src_mask):
    """Seq2Seq.decode with knobs: self ("both" masks, "causal" only, "pad" only, "none"), cross ("src",
    "none"), norm ("dec", "none", "enc"), head (a factor on the logits)."""
    tgt_in = np.asarray(tgt_in)
    causal, pad = create_causal_mask(tgt_in.shape[-1]), padding_mask(tgt_in, model.config.pad_id)
    on_queries = np.swapaxes(pad, -1, -2)  # (..., 1, m, 1): the pad positions' rows hidden, not their columns
    self_mask = {"both": causal + pad, "causal": causal, "pad": pad, "none": None, "queries": causal + on_queries,
                 "queries_only": on_queries}[k.get("self_mask", "both")]
    cross = src_mask if k.get("cross", "src") == "src" else None
    x = model.embed(tgt_in)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=cross)
    gamma = {"dec": model.decoder_norm_gamma, "enc": model.encoder_norm_gamma, "none": None}[k.get("norm", "dec")]
    h = x if gamma is None else rms_norm(x, gamma, model.config.eps)
    return k.get("head", 1.0) * (h @ model.embedding.T)


def _edit_last_target(args, kwargs):
    tgt = _other_last(args[1], args[0])
    return None if tgt is None else ((args[0], tgt) + tuple(args[2:]), kwargs)


def _earlier_logits(value, args, kwargs):
    return np.asarray(value)[..., :-1, :]


def _masked_source_row(args, kwargs):
    """One more source row in H_enc, hidden by src_mask: the logits must not change."""
    model, tgt_in, H_enc, src_mask = args
    H_enc = np.asarray(H_enc)
    extra = generator(64).normal(size=H_enc.shape[:-2] + (1, H_enc.shape[-1])) * 3.0
    hidden = np.full(np.shape(src_mask)[:-1] + (1,), -np.inf)
    return (model, tgt_in, np.concatenate([H_enc, extra], axis=-2),
            np.concatenate([np.asarray(src_mask, dtype=np.float64), hidden], axis=-1)), kwargs


def _all_logits(value, args, kwargs):
    return value


DECODE_PROBES = Probes(
    _decode_model,
    Combos("decode", [
        ("self_mask", [("both", "", ""), ("causal", "no_target_padding_mask", "the self-attention mask is causal only: the target padding is not hidden"),
                  ("pad", "no_causal_mask", "the self-attention mask hides the target pads but is not causal"),
                  ("none", "no_self_mask", "the self-attention gets no mask at all (neither causal nor padding)"),
                  ("queries", "padding_on_queries", "the target padding mask hides the pad positions' rows (their "
                                                    "queries), so they attend to nothing: padding masks keys only, "
                                                    "padding_mask's (..., 1, 1, m), one entry per key, added as it is"),
                  ("queries_only", "padding_on_queries_not_causal",
                   "the self-attention mask is the target padding on the query rows, (..., 1, m, 1), and not causal: "
                   "it must be causal, plus padding_mask's (..., 1, 1, m) hiding pad keys")]),
        ("cross", [("src", "", ""), ("none", "no_cross_mask", "the cross-attention gets no mask: the source pads are visible")]),
        ("norm", [("dec", "", ""), ("none", "no_final_norm", "the final RMSNorm (decoder_norm_gamma) is missing"),
                  ("enc", "encoder_gamma", "the final norm uses encoder_norm_gamma instead of decoder_norm_gamma")]),
    ], "The decoder: embed(tgt_in); each block with the causal mask plus the target padding mask, and src_mask "
       "in cross-attention; RMSNorm with decoder_norm_gamma; then @ E.T."),
    Proportional("the logits", lambda model, *rest: [
        ("sqrt(d_model)", float(np.sqrt(model.config.d_model)),
         "the logits are multiplied by sqrt(d_model): the tied head is h @ E.T, unscaled (only the embedding's "
         "rows are scaled on the way in)."),
        ("1/sqrt(d_model)", float(1 / np.sqrt(model.config.d_model)),
         "the logits are divided by sqrt(d_model): the tied head is h @ E.T, unscaled.")]),
    Invariant("future_visible", _edit_last_target, _earlier_logits, (
        "changing only the last target input changed the logits at earlier positions: a position reads the "
        "positions after it. The self-attention mask must hide every key j > i: add the causal mask, "
        "create_causal_mask(m), to the target padding mask."), kind="causal"),
    Invariant("source_pads_visible", _masked_source_row, _all_logits, (
        "one more source position, hidden by src_mask, changed your logits: the cross-attention does not use "
        "src_mask. Pass src_mask as every decoder block's cross-attention mask."), kind="padding"))


DECODE = Exercise("6.4", "decode", points=4, reference=Seq2Seq.decode,
                  sizes={"tgt_in": "... m", "H_enc": "... n d_model", "self.config.n_heads": "h",
                         "self.config.d_ff": "d_ff", "self.config.vocab_size": "V"},
                  reads=("self.config.pad_id", "self.config.eps"))


@DECODE.checked_by
def check_decode(decode=None, *, points=None, hidden=False):
    """Embed, N decoder blocks (causal + padding self-mask, source cross-mask),
    final RMSNorm, tied head h @ E.T.

    Your `embed` is replaced by the reference while this runs, and H_enc comes from the reference
    encoder, so mistakes in Exercises 6.2 and 6.3 are not charged again here.
    """
    c = Checker(DECODE, points, hidden)
    fn = c.find(decode, "decode")
    fn = rebind(fn, embed=Seq2Seq.embed)
    cases = decode_cases()
    common = dict(catalog=CATALOG["decode"], forbidden=_FORWARD, probes=DECODE_PROBES)
    c.check_cases("logits (..., m, V) from the target inputs and H_enc", fn, Seq2Seq.decode, cases[:2], **common)
    c.check_cases("another pad id, width and depth; batch shapes; extreme embeddings", fn, Seq2Seq.decode,
                  cases[2:], **common)
    return c.result()
