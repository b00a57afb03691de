"""Exercise 6.3, encode: the knob model of its slips and its invariants (ENCODE_PROBES: padding must
not change the real positions, the encoder is not causal), and the checker."""

import numpy as np

from ...attention import create_causal_mask, padding_mask
from ...layers import rms_norm
from ...mistakes import CATALOG
from ...model import Seq2Seq
from ..core import Checker, rebind
from ..exercises import Exercise
from ..probes import Combos, Invariant, Probes
from .forward_cases import _FORWARD, _other_last, encode_cases


def _encode_model(k, model, src):
    """Seq2Seq.encode with knobs: mask ("pad", "none", "causal" (causal and padding), "pad0" (pad id 0)),
    norm ("enc", "none", "dec" (the decoder's gamma)), chain (False: every block reads the embedding)."""
    src = np.asarray(src)
    pad = 0 if k.get("mask") == "pad0" else model.config.pad_id
    src_mask = padding_mask(src, pad)
    used = {"pad": src_mask, "pad0": src_mask, "none": None,
            "causal": src_mask + create_causal_mask(src.shape[-1])}[k.get("mask", "pad")]
    x0 = x = model.embed(src)
    for block in model.encoder:
        x = block(x if k.get("chain", True) else x0, mask=used)
    gamma = {"enc": model.encoder_norm_gamma, "dec": model.decoder_norm_gamma, "none": None}[k.get("norm", "enc")]
    return (x if gamma is None else rms_norm(x, gamma, model.config.eps)), src_mask


def _real(src, model):
    return np.asarray(src) != model.config.pad_id


def _append_pad(args, kwargs):
    model, src = args[0], np.asarray(args[1])
    pad = np.full(src.shape[:-1] + (1,), model.config.pad_id, dtype=src.dtype)
    return (model, np.concatenate([src, pad], axis=-1)), kwargs


def _real_rows(value, args, kwargs):
    """H_enc at the real (non-pad) source positions, in order."""
    return np.asarray(value[0])[_real(args[1], args[0])]


def _edit_last_source(args, kwargs):
    src = _other_last(args[1], args[0])
    return None if src is None else ((args[0], src), kwargs)


def _earlier_real_rows(value, args, kwargs):
    H = np.asarray(value[0])[..., :-1, :]
    return H[_real(np.asarray(args[1])[..., :-1], args[0])]


ENCODE_PROBES = Probes(
    _encode_model,
    Combos("encode", [
        ("mask", [("pad", "", ""), ("none", "no_padding_mask", "the blocks get no padding mask, so real tokens attend to pads"),
                  ("causal", "causal", "the blocks get a causal mask: the encoder reads the whole source, both ways"),
                  ("pad0", "pad_id_zero", "the padding mask hides the id 0 instead of model.config.pad_id")]),
        ("norm", [("enc", "", ""), ("none", "no_final_norm", "the final RMSNorm (encoder_norm_gamma) is missing"),
                  ("dec", "decoder_gamma", "the final norm uses decoder_norm_gamma instead of encoder_norm_gamma")]),
        ("chain", [(True, "", ""), (False, "not_chained", "every block reads the embedding instead of the previous block's output")]),
    ], "H_enc = RMSNorm(block_N(... block_1(embed(src), src_mask) ...), encoder_norm_gamma)."),
    Invariant("pad_changes_real_positions", _append_pad, _real_rows, (
        "one more pad at the end of the source changed H_enc at the real positions: the real tokens attend to "
        "the pads. Pass the padding mask, padding_mask(src, model.config.pad_id), to every encoder block."),
        kind="padding"),
    Invariant("encoder_is_causal", _edit_last_source, _earlier_real_rows, (
        "changing the last source token changed no earlier position of H_enc: the earlier positions never "
        "read it. The encoder is bidirectional: only the padding mask, no causal mask."), change=True, kind="causal"))


ENCODE = Exercise("6.3", "encode", points=3, reference=Seq2Seq.encode,
                  sizes={"src": "... n", "self.config.d_model": "d_model", "self.config.n_heads": "h",
                         "self.config.d_ff": "d_ff", "self.config.vocab_size": "V"},
                  reads=("self.config.pad_id", "self.config.eps"))


@ENCODE.checked_by
def check_encode(encode=None, *, points=None, hidden=False):
    """Embed, N encoder blocks with the source padding mask, final RMSNorm.

    Your `embed` is replaced by the reference while this runs, so a mistake in Exercise 6.2 is not
    charged again here.
    """
    c = Checker(ENCODE, points, hidden)
    fn = c.find(encode, "encode")
    fn = rebind(fn, embed=Seq2Seq.embed)
    cases = encode_cases()
    common = dict(catalog=CATALOG["encode"], forbidden=_FORWARD, names=("H_enc", "src_mask"))
    c.check_cases("H_enc and the source padding mask", fn, Seq2Seq.encode, cases, probes=ENCODE_PROBES, **common)
    return c.result()
