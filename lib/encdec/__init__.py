"""encdec: the reference implementation of the course Encoder-Decoder Transformers, from NumPy to GPU.

NumPy, float64, any leading batch dimensions, additive masks. The PyTorch twin lives in
`encdec.torch_model` (imported on demand, so the NumPy side works without torch).
"""

from .attention import (
    MultiHeadAttention,
    create_causal_mask,
    cross_attention,
    merge_heads,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from .backward import (
    attention_backward,
    dropout_backward,
    gelu_backward,
    gradient_check,
    linear_backward,
    numerical_gradient,
    relative_error,
    rms_norm_backward,
    softmax_backward,
)
from .decoding import (
    KVCache,
    beam_search,
    decode_step,
    greedy_decode,
    next_token_distribution,
    sample_next_token,
)
from .layers import (
    DecoderBlock,
    EncoderBlock,
    FeedForward,
    decoder_block_post_norm,
    dropout,
    gelu,
    rms_norm,
    sinusoidal_positions,
)
from .loss import log_softmax, softmax_cross_entropy, token_accuracy
from .model import ModelConfig, Seq2Seq, parameter_count, shift_right
from .optim import Adam, adam_update, clip_grad_norm, warmup_cosine_schedule, warmup_schedule
# `encdec.backward` stays the module of Lesson 7's backward passes; the whole model's backward
# pass is `encdec.training.backward`, also exported as `encdec.model_backward`.
from .training import backward as model_backward
from .training import forward_with_cache, train_step

__version__ = "0.1.0"
