"""Exercise 10.4, torch_train_step: the mistakes of one training step with clipping (and `_loss`,
`_shift_right`, `_set_lr`, the parts they keep right)."""

from .. import mistake


# -- Exercise 10.4 torch_train_step ------------------------------------------------------------------------------
def _loss(logits, targets, pad_id):
    """Mean cross-entropy over the non-pad target positions (what F.cross_entropy(ignore_index=pad) gives)."""
    logp = logits.log_softmax(dim=-1).gather(-1, targets[..., None]).squeeze(-1)  # (B, m)
    keep = targets != pad_id
    return -(logp * keep).sum() / keep.sum()


def _shift_right(targets, bos_id):
    tgt_in = targets.roll(1, dims=-1)
    tgt_in[..., 0] = bos_id
    return tgt_in


def _set_lr(optimizer, lr):
    for group in optimizer.param_groups:
        group["lr"] = lr


@mistake("torch_train_step", "no_zero_grad",
         "the gradients are never zeroed: torch adds each backward pass's gradients to what .grad "
         "already holds, so the second step's gradient (and its norm) still contains the first one. "
         "Call optimizer.zero_grad() before loss.backward().")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "zero_grad_after_backward",
         "optimizer.zero_grad() runs after loss.backward(), so it wipes the gradients this step has just "
         "computed: the clipping and the update then see zeros, and the weights do not move. zero_grad() clears "
         "what the previous step left: call it first, before the forward pass and loss.backward().")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    loss.backward()
    optimizer.zero_grad()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "zero_grad_before_step",
         "optimizer.zero_grad() runs between the clipping and optimizer.step(), so the step sees gradients of "
         "zero and the weights do not move (the norm, taken before, still looks right). zero_grad() clears what "
         "the previous step left: call it first, before the forward pass and loss.backward().")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.zero_grad()
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "clip_after_step",
         "the clipping does not reach the update: clip_grad_norm_ runs either before loss.backward() (on "
         "gradients that are not this step's yet) or after optimizer.step() (when the update has already "
         "used them). Clip between loss.backward() and optimizer.step().")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    return loss.item(), norm.item()


@mistake("torch_train_step", "clip_before_backward",
         "the clipping does not reach the update: clip_grad_norm_ runs before loss.backward(), on gradients "
         "that are not this step's yet (zero after zero_grad(), so the norm it returns is 0), and the update "
         "then uses the unclipped ones. Clip between loss.backward() and optimizer.step().")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    loss.backward()
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "norm_after_clipping",
         "the gradient norm is measured after clipping, so it never exceeds max_norm and cannot show a "
         "gradient spike. Return the norm before clipping: torch.nn.utils.clip_grad_norm_ returns "
         "exactly that.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    norm = torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters()))
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "no_shift",
         "the decoder reads the targets themselves, so position t sees the very token it must "
         "predict and learns to copy it. Teacher forcing feeds the targets shifted right: <bos> "
         "first, the last token dropped.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, tgt), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "rolled_without_bos",
         "the decoder's input is the targets rolled right by one with nothing put in front: position 0 holds the "
         "last target (an <eos> or a pad) where <bos> belongs. Shifting right is a roll and <bos> written into "
         "position 0: tgt_in[:, 0] = bos_id (or torch.cat of a <bos> column and tgt[:, :-1]).")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    loss = _loss(model(src, tgt.roll(1, dims=-1)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "pads_counted",
         "the loss is averaged over the pad positions too, as if they were tokens to predict. Average "
         "over the real target tokens only: F.cross_entropy(..., ignore_index=pad_id), or mask the pads "
         "out and divide by their number.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    logits = model(src, _shift_right(tgt, bos_id))
    loss = -logits.log_softmax(dim=-1).gather(-1, tgt[..., None]).mean()
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "lr_in_first_group_only",
         "the learning rate is set in optimizer.param_groups[0] only: the other group (the gains and "
         "biases, without weight decay) keeps the rate it was made with. Set group['lr'] = lr in every "
         "group of optimizer.param_groups.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    optimizer.param_groups[0]["lr"] = lr
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


@mistake("torch_train_step", "lr_not_set",
         "the learning rate of this step is never given to the optimizer, so every step uses the rate "
         "it was made with and the schedule does nothing. Before optimizer.step(), set group['lr'] = lr "
         "in every group of optimizer.param_groups.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("torch_train_step", "lr_set_after_step",
         "the learning rate is set after optimizer.step(), so each step moves with the previous step's rate. "
         "Set group[\"lr\"] = lr for every parameter group first.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    loss = _loss(model(src, _shift_right(tgt, bos_id)), tgt, model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    _set_lr(optimizer, lr)
    return loss.item(), norm.item()


@mistake("torch_train_step", "loss_per_sequence",
         "the loss is summed over the tokens and divided by the number of sequences, not by the number of "
         "real target tokens: F.cross_entropy(..., ignore_index=pad_id) averages over the real tokens.")
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):  # noqa: F811
    import torch
    _set_lr(optimizer, lr)
    logits = model(src, _shift_right(tgt, bos_id))
    logp = logits.log_softmax(dim=-1).gather(-1, tgt[..., None]).squeeze(-1)
    loss = -(logp * (tgt != model.config.pad_id)).sum() / tgt.shape[0]
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()
