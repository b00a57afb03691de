"""Exercise 6.3, encode: the mistakes of the encoder stack, each calling the reference embedding
`embed_`."""

from ...attention import create_causal_mask, padding_mask
from ...layers import rms_norm
from .. import mistake
from .shared import embed_


# -- Exercise 6.3 encode ---------------------------------------------------------------------------------
@mistake("encode", "no_final_norm",
         "the encoder's output is not normalised. With pre-norm blocks the residual stream is never "
         "normalised inside the stack, so the encoder ends with one RMSNorm: "
         "rms_norm(x, model.encoder_norm_gamma, model.config.eps) is H_enc.")
def encode(model, src):
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return x, src_mask


@mistake("encode", "no_padding_mask",
         "the encoder blocks get no mask, so real source tokens attend to the pad tokens. Pass the "
         "source padding mask, padding_mask(src, model.config.pad_id), to every encoder block.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "causal_encoder",
         "the encoder uses a causal mask. The encoder reads the whole source at once: every source "
         "token may look at every other (only the pads are hidden). Causal masks belong to the decoder.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x, mask=src_mask + create_causal_mask(src.shape[-1]))
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "blocks_not_chained",
         "every encoder block reads the embeddings, so only the last block counts. The blocks form "
         "a stack: each one reads the previous block's output (x = block(x, mask=src_mask)).")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        out = block(x, mask=src_mask)
    return rms_norm(out, model.encoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "extra_residual",
         "the block's output is added to its input (x = x + block(x)). The blocks already contain "
         "their residual connections, so this counts x twice. Use x = block(x, mask=src_mask).")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = x + block(x, mask=src_mask)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "decoder_norm_gamma",
         "the encoder's final norm uses the decoder's gain. Each stack has its own final norm: "
         "use model.encoder_norm_gamma here.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "pad_id_zero",
         "the padding mask assumes the pad id is 0. Use model.config.pad_id: the model says which "
         "id is padding.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, 0)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("encode", "causal_mask_only",
         "the encoder blocks get a causal mask and no padding mask: the source is read one way only, and "
         "its pads are attended. The encoder's mask is the padding mask alone.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x, mask=create_causal_mask(src.shape[-1]))
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "norm_before_the_blocks",
         "the final RMSNorm is applied to the embeddings, before the blocks, not to the last block's output. "
         "H_enc = rms_norm(x, encoder_norm_gamma) after the last encoder block.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = rms_norm(embed_(model, src), model.encoder_norm_gamma, model.config.eps)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return x, src_mask
