"""Exercise 10.5, exact_match: the mistakes of exact-match evaluation (and `_padded`, `_decoded`)."""

from .. import mistake


# -- Exercise 10.5 exact_match -------------------------------------------------------------------------------------
def _padded(tokens, width, pad):
    """(B, L) -> (B, width): cut, or padded on the right with pad."""
    import torch
    if tokens.shape[1] >= width:
        return tokens[:, :width]
    return torch.cat([tokens, tokens.new_full((tokens.shape[0], width - tokens.shape[1]), pad)], dim=1)


def _decoded(model, src, bos_id, eos_id, max_len):
    import torch
    with torch.no_grad():
        return model.greedy_decode(src, bos_id, eos_id, max_len)


@mistake("exact_match", "token_accuracy",
         "this is token accuracy, the fraction of target tokens predicted right, not exact match. A "
         "sequence is one answer: it counts 1 only when every one of its tokens, up to and including "
         "<eos>, is right, and 0 otherwise; exact match is the fraction of such sequences.")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    pad = model.config.pad_id
    pred = _padded(pred, tgt.shape[1], pad)
    real = tgt != pad
    return ((pred == tgt) & real).sum().item() / real.sum().item()


@mistake("exact_match", "eos_not_compared",
         "only the tokens before the target's <eos> are compared, so a prediction that goes on past "
         "the end (an extra token, or no <eos> at all) still counts. <eos> is part of the answer: "
         "compare every position up to and including the target's <eos>.")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    pad = model.config.pad_id
    pred = _padded(pred, tgt.shape[1], pad)
    compared = (tgt != pad) & (tgt != eos_id)
    return ((pred == tgt) | ~compared).all(dim=1).float().mean().item()


@mistake("exact_match", "prefix_counts",
         "a prediction cut short (a prefix of the target, stopped by max_len before its <eos>) counts as a "
         "match: the comparison stops where the prediction ends (zip stops at the shorter row, or the "
         "prediction's pads are skipped). Compare against the whole target: every target token up to and "
         "including <eos> must be matched, so pad the prediction to the target's width first.")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    pad = model.config.pad_id
    width = max(pred.shape[1], tgt.shape[1])
    pred, target = _padded(pred, width, pad), _padded(tgt, width, pad)
    return ((pred == target) | (pred == pad)).all(dim=1).float().mean().item()


@mistake("exact_match", "pads_with_zero",
         "the shorter rows are padded with 0 where the model's pad id belongs (model.config.pad_id): with "
         "another pad id, a right prediction padded with 0 differs from its target's pads, and does not count. "
         "Pad with model.config.pad_id, or compare only the positions up to and including the target's <eos>.")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    width = max(pred.shape[1], tgt.shape[1])
    pred, target = _padded(pred, width, 0), _padded(tgt, width, 0)
    return (pred == target).all(dim=1).float().mean().item()


@mistake("exact_match", "mode_not_restored",
         "the model is left in eval mode after evaluating. Evaluation runs in the middle of training, "
         "and the training steps after it would then run without dropout. Remember model.training "
         "before model.eval(), and put it back at the end: model.train(was_training).")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad = model.config.pad_id
    model.eval()
    with torch.no_grad():
        pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    width = max(pred.shape[1], tgt.shape[1])
    return (_padded(pred, width, pad) == _padded(tgt, width, pad)).all(dim=1).float().mean().item()


@mistake("exact_match", "train_after",
         "the model is put in training mode at the end, whatever mode it was in: evaluating a model "
         "that was in eval mode switches it to training mode. Restore the mode it had: "
         "was_training = model.training before model.eval(), model.train(was_training) at the end.")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad = model.config.pad_id
    model.eval()
    with torch.no_grad():
        pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    model.train()
    width = max(pred.shape[1], tgt.shape[1])
    return (_padded(pred, width, pad) == _padded(tgt, width, pad)).all(dim=1).float().mean().item()


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("exact_match", "count_not_fraction",
         "this is the number of sequences that match, not the fraction: divide by the number of sequences "
         "(a score between 0 and 1).")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    pad = model.config.pad_id
    pred = _padded(pred, tgt.shape[1], pad)
    real = tgt != pad
    return float(((pred == tgt) | ~real).all(dim=1).sum().item())


@mistake("exact_match", "any_token_counts",
         "a sequence counts as a match when any one of its tokens is right: exact match needs every target "
         "token, up to and including <eos>, to be right (.all over the positions, not .any).")
def exact_match(model, src, tgt, bos_id, eos_id, max_len):  # noqa: F811
    was_training = model.training
    model.eval()
    pred = _decoded(model, src, bos_id, eos_id, max_len)
    model.train(was_training)
    pad = model.config.pad_id
    pred = _padded(pred, tgt.shape[1], pad)
    real = tgt != pad
    return ((pred == tgt) & real).any(dim=1).float().mean().item()
