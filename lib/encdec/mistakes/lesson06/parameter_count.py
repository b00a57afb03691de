"""Exercise 6.5, parameter_count: the mistakes of counting the model's parameters."""

from .. import mistake


# -- Exercise 6.5 parameter_count ------------------------------------------------------------------------
def _ffn(d, d_ff):
    return 2 * d * d_ff + d_ff + d


@mistake("parameter_count", "embedding_counted_twice",
         "V·d is counted more than once. The source embedding, the target embedding and the output "
         "head are one shared matrix E (V, d): it appears once in the count.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    enc = 4 * d * d + _ffn(d, d_ff) + 2 * d
    dec = 8 * d * d + _ffn(d, d_ff) + 3 * d
    return 2 * V * d + n_encoder_layers * enc + n_dec * dec + 2 * d


@mistake("parameter_count", "no_cross_attention",
         "the decoder block is counted like an encoder block. It has a third sublayer, cross-attention, "
         "with its own W_q, W_k, W_v, W_o (4d²) and its own norm gain (d).")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    block = 4 * d * d + _ffn(d, d_ff) + 2 * d
    return V * d + (n_encoder_layers + n_dec) * block + 2 * d


@mistake("parameter_count", "no_ffn_biases",
         "the feed-forward biases are missing. FeedForward has W1 (d, d_ff), b1 (d_ff), W2 (d_ff, d) "
         "and b2 (d): 2·d·d_ff + d_ff + d numbers.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    enc = 4 * d * d + 2 * d * d_ff + 2 * d
    dec = 8 * d * d + 2 * d * d_ff + 3 * d
    return V * d + n_encoder_layers * enc + n_dec * dec + 2 * d


@mistake("parameter_count", "no_norm_gains",
         "the RMSNorm gains are missing. Every norm has a [LEARNED] gain gamma of d numbers: two per "
         "encoder block, three per decoder block, and one final norm for each stack.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    return V * d + n_encoder_layers * (4 * d * d + _ffn(d, d_ff)) + n_dec * (8 * d * d + _ffn(d, d_ff))


@mistake("parameter_count", "no_final_norms",
         "the two final norms are missing: the encoder ends with one RMSNorm (its output is H_enc) and "
         "the decoder ends with another before the head, each with d gains: + 2d.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    enc = 4 * d * d + _ffn(d, d_ff) + 2 * d
    dec = 8 * d * d + _ffn(d, d_ff) + 3 * d
    return V * d + n_encoder_layers * enc + n_dec * dec


@mistake("parameter_count", "attention_biases",
         "attention biases are counted. The course's projections W_q, W_k, W_v, W_o have no biases: "
         "an attention sublayer holds exactly 4d² numbers.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    enc = 4 * d * d + 4 * d + _ffn(d, d_ff) + 2 * d
    dec = 8 * d * d + 8 * d + _ffn(d, d_ff) + 3 * d
    return V * d + n_encoder_layers * enc + n_dec * dec + 2 * d


@mistake("parameter_count", "zero_decoder_layers_as_none",
         "n_decoder_layers=0 is read as None (as `n_decoder_layers or n_encoder_layers`, or `if not "
         "n_decoder_layers:`, reads it): 0 means a model with no decoder block, and only None means as many "
         "decoder blocks as encoder blocks. Test `if n_decoder_layers is None:`.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_decoder_layers = n_decoder_layers or n_encoder_layers
    V, d = vocab_size, d_model
    enc = 4 * d * d + _ffn(d, d_ff) + 2 * d
    dec = 8 * d * d + _ffn(d, d_ff) + 3 * d
    return V * d + n_encoder_layers * enc + n_decoder_layers * dec + 2 * d


@mistake("parameter_count", "ignores_n_decoder_layers",
         "n_decoder_layers is ignored: the decoder is always given n_encoder_layers blocks. Use "
         "n_decoder_layers when it is given, and n_encoder_layers only when it is None.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    V, d = vocab_size, d_model
    enc = 4 * d * d + _ffn(d, d_ff) + 2 * d
    dec = 8 * d * d + _ffn(d, d_ff) + 3 * d
    return V * d + n_encoder_layers * (enc + dec) + 2 * d


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("parameter_count", "no_cross_attention_norm",
         "each decoder block is counted with two RMSNorm gains, not three: the cross-attention sublayer "
         "has its own norm (norm2_gamma), d more numbers per decoder block.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    ffn = 2 * d * d_ff + d_ff + d
    return V * d + n_encoder_layers * (4 * d * d + ffn + 2 * d) + n_dec * (8 * d * d + ffn + 2 * d) + 2 * d


@mistake("parameter_count", "one_ffn_bias",
         "only the first feed-forward bias (d_ff numbers) is counted: the second linear layer has a bias "
         "too, d numbers, in every block.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    ffn = 2 * d * d_ff + d_ff
    return V * d + n_encoder_layers * (4 * d * d + ffn + 2 * d) + n_dec * (8 * d * d + ffn + 3 * d) + 2 * d
