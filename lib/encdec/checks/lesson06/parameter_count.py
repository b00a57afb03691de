"""Exercise 6.5, parameter_count: its cases, the count of a real model, the formula as a sum of
terms with knobs (COUNT_PROBES) and the checker."""

from ... import model as model_mod
from ...attention import MultiHeadAttention
from ...layers import DecoderBlock, EncoderBlock, FeedForward
from ...mistakes import CATALOG
from ...model import Seq2Seq
from ..core import Case, Checker
from ..exercises import Exercise
from ..probes import Combos, Probes


def _counted_by_the_model(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    """The number of entries in a real model's parameters(), for the same sizes."""
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    model = Seq2Seq(vocab_size=vocab_size, d_model=d_model, n_heads=1, d_ff=d_ff,
                    n_encoder_layers=n_encoder_layers, n_decoder_layers=n_dec, rng=0)
    return model.num_parameters()


def parameter_count_cases():
    return {
        "formula": [Case("V=17, d=16, d_ff=24, N=2 (n_decoder_layers not given)", (17, 16, 24, 2)),
                    Case("V=100, d=32, d_ff=128, 3 encoder and 1 decoder layers", (100, 32, 128, 3, 1)),
                    Case("V=32000, d=512, d_ff=2048, N=6 (a base-sized model)", (32000, 512, 2048, 6)),
                    Case("V=7, d=4, d_ff=3, 1 encoder and 4 decoder layers", (7, 4, 3, 1, 4), hidden=True),
                    Case("n_decoder_layers=0 (no decoder blocks; 0 is not None)", (11, 6, 10, 2, 0))],
        "model": [Case("V=13, d=8, d_ff=12, 2 encoder and 3 decoder layers", (13, 8, 12, 2, 3)),
                  Case("V=50, d=6, d_ff=20, N=1", (50, 6, 20, 1), hidden=True)],
    }


_COUNTERS = [model_mod.parameter_count, Seq2Seq.num_parameters, Seq2Seq.parameters, EncoderBlock.parameters,
             DecoderBlock.parameters, MultiHeadAttention.parameters, FeedForward.parameters]


_COUNT_TERMS = [  # (knob, what it counts, in the course's words)
    ("embedding", "the embedding E (V d)"),
    ("self_attention", "the self-attention weights W_q, W_k, W_v, W_o of every block (4 d^2 each)"),
    ("cross_attention", "the cross-attention weights of every decoder block (4 d^2 each)"),
    ("ffn_weights", "the feed-forward matrices W1 and W2 of every block (2 d d_ff)"),
    ("ffn_biases", "the feed-forward biases b1 and b2 of every block (d_ff + d)"),
    ("block_norms", "the blocks' RMSNorm gains (2 d per encoder block, 3 d per decoder block)"),
    ("final_norms", "the two final RMSNorm gains (2 d)"),
]


def _count_model(k, vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    """parameter_count as a sum of terms, each with a knob: its multiplicity (1 right, 0 left out, 2
    counted twice); extra terms head (an untied output head, V d) and attention_biases (4 d per
    attention); bias_sizes (both feed-forward biases of size d_ff, or both of size d, or one left out); nd_is_n (n_decoder_layers ignored); zero_as_none (n_decoder_layers=0 read as None)."""
    V, d, dff, N = vocab_size, d_model, d_ff, n_encoder_layers
    Nd = N if (n_decoder_layers is None or k.get("nd_is_n") or (k.get("zero_as_none") and not n_decoder_layers)) \
        else n_decoder_layers
    terms = {"embedding": V * d, "self_attention": 4 * d * d * (N + Nd), "cross_attention": 4 * d * d * Nd,
             "ffn_weights": 2 * d * dff * (N + Nd),
             "ffn_biases": {"both_dff": 2 * dff, "both_d": 2 * d, "no_b1": d, "no_b2": dff}.get(
                 k.get("bias_sizes"), dff + d) * (N + Nd),
             "block_norms": 2 * d * N + 3 * d * Nd, "final_norms": 2 * d}
    total = sum(k.get(name, 1) * value for name, value in terms.items())
    return total + k.get("head", 0) * V * d + k.get("attention_biases", 0) * 4 * d * (N + 2 * Nd)


def _count_choices():
    choices = [(name, [(1, "", ""), (0, f"no_{name}", f"{words} is left out"),
                       (2, f"twice_{name}", f"{words} is counted twice")]) for name, words in _COUNT_TERMS]
    choices.append(("head", [(0, "", ""), (1, "untied_head", "an output head of V d is counted, but the head is E itself (tied)")]))
    choices.append(("attention_biases", [(0, "", ""), (1, "attention_biases",
                                                       "biases are counted for the attention projections, which have none")]))
    choices.append(("bias_sizes", [(None, "", ""),
                                   ("both_dff", "ffn_biases_both_d_ff", "both feed-forward biases are counted with d_ff "
                                    "entries, but b2 is added to W2's output, of width d: b1 has d_ff, b2 has d"),
                                   ("both_d", "ffn_biases_both_d", "both feed-forward biases are counted with d "
                                    "entries, but b1 is added to W1's output, of width d_ff: b1 has d_ff, b2 has d"),
                                   ("no_b1", "ffn_b1_left_out", "the feed-forward's first bias b1 (d_ff entries, added "
                                    "to W1's output) is left out: each block's FFN has two biases, b1 (d_ff) and b2 (d)"),
                                   ("no_b2", "ffn_b2_left_out", "the feed-forward's second bias b2 (d entries, added "
                                    "to W2's output) is left out: each block's FFN has two biases, b1 (d_ff) and b2 (d)")]))
    choices.append(("nd_is_n", [(False, "", ""), (True, "ignores_n_decoder_layers",
                                                  "n_decoder_layers is ignored: the decoder gets n_encoder_layers blocks")]))
    choices.append(("zero_as_none", [(False, "", ""), (True, "zero_decoder_layers_as_none",
                                                       "n_decoder_layers=0 is read as None (as `n_decoder_layers or "
                                                       "n_encoder_layers` reads it): 0 means no decoder block, and only "
                                                       "None means as many as the encoder; test `is None`")]))
    return choices


COUNT_PROBES = Probes(_count_model, Combos("count", _count_choices(),
                                            "Count every [LEARNED] array once: the embedding E; in each block its "
                                            "attention projections, its feed-forward matrices and biases, and its "
                                            "norm gains; and the two final norm gains (the table above the "
                                            "exercise)."))


PARAMETER_COUNT = Exercise("6.5", "parameter_count", points=3, reference=model_mod.parameter_count,
                           reads=("vocab_size", "d_model", "d_ff", "n_encoder_layers", "n_decoder_layers"),
                           weights={"the formula": 2})


@PARAMETER_COUNT.checked_by
def check_parameter_count(parameter_count=None, *, points=None, hidden=False):
    """The number of [LEARNED] numbers as a formula in V, d, d_ff and the layer counts."""
    c = Checker(PARAMETER_COUNT, points, hidden)
    fn = c.find(parameter_count, "parameter_count")
    cases = parameter_count_cases()
    common = dict(catalog=CATALOG["parameter_count"], forbidden=_COUNTERS)
    c.check_cases("the formula", fn, model_mod.parameter_count, cases["formula"], probes=COUNT_PROBES, **common)
    c.check_cases("agrees with the arrays of a real Seq2Seq", fn, _counted_by_the_model, cases["model"],
                  probes=COUNT_PROBES, **common)
    return c.result()
