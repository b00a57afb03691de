"""The capstone's training loop: the model and its optimizer, the learning rate, each step's global
batch and loss, and `train`, which runs the steps with validation and checkpoints.

Data parallelism: every process rebuilds the same global batch from the step number and takes
its own contiguous slice of rows. Each process's loss is its share of the sum over the global
batch's target tokens, scaled so that DDP's gradient average is the gradient of the single-process
loss: the same global batch gives the same weights, whatever the world size, up to rounding (the
all-reduce adds the processes' gradients in another order than one process's sum).
"""

import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from ..model import shift_right
from ..optim import warmup_cosine_schedule
from ..torch_model import Seq2Seq
from .checkpoints import load_checkpoint, save_checkpoint
from .devices import bf16_autocast, pick_device, processes_from_env, tf32_disabled, torch_dtype
from .evaluation import exact_match
from .tasks import get as get_task


# -- one training step -----------------------------------------------------------------------------
def build_model(config, device="cpu"):
    """The torch twin, initialised from config.seed (the same weights on every process)."""
    model = Seq2Seq(config.model_config(), seed=config.seed)
    return model.to(device=device, dtype=torch_dtype(config.dtype))


def build_optimizer(model, config):
    """AdamW with weight decay on the matrices (ndim >= 2) only."""
    params = list(model.parameters())
    decay = [p for p in params if p.ndim >= 2]
    rest = [p for p in params if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": config.weight_decay},
              {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=config.betas, fused=True)  # one kernel for all


def learning_rate(step, config):
    return float(warmup_cosine_schedule(step, config.lr, config.warmup, config.steps, config.lr * config.min_lr_ratio))


def global_batch(batches, step, config, procs, device):
    """This process's rows of the step's global batch.

    Returns (src (b, n), tgt_in (b, T), tgt (b, T), counts) with b = batch_size / world_size and T
    the task's TARGET_LEN (11 for dates);
    counts = (target tokens, source tokens) of the whole global batch: the loss is averaged over
    the global target tokens, whatever the number of processes.
    """
    if config.batch_size % procs.world_size:
        raise ValueError(f"batch_size {config.batch_size} must be a multiple of the number of "
                         f"processes {procs.world_size}")
    task = get_task(config.task)
    src, tgt = batches.batch(step, config.batch_size)  # (B, n), (B, T)
    counts = (int((tgt != task.PAD).sum()), int((src != task.PAD).sum()))
    b = config.batch_size // procs.world_size
    rows = slice(procs.rank * b, (procs.rank + 1) * b)
    src, tgt = src[rows], tgt[rows]
    tgt_in = shift_right(tgt, task.BOS)
    as_t = lambda a: torch.from_numpy(a).to(device, non_blocking=True)  # noqa: E731
    return as_t(src), as_t(tgt_in), as_t(tgt), counts


def loss_and_stats(model, src, tgt_in, tgt, n_tokens, world_size=1, bf16=False, pad_id=0):
    """The loss whose DDP-averaged gradient equals the gradient of the global mean loss (pad_id: the
    task's PAD, 0 in both tasks).

    Returns (loss, local mean loss (detached), local token accuracy (detached)).
    """
    with bf16_autocast(src.device, bf16):
        logits = model(src, tgt_in)  # (b, m, V)
    logits = logits.float() if bf16 else logits
    loss_sum = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=pad_id, reduction="sum")
    keep = tgt != pad_id
    with torch.no_grad():
        local = keep.sum().clamp(min=1)
        mean_loss = loss_sum.detach() / local
        accuracy = ((logits.argmax(-1) == tgt) & keep).sum() / local
    return loss_sum * (world_size / n_tokens), mean_loss, accuracy


# -- the loop --------------------------------------------------------------------------------------
def train(config, out="runs/capstone", device=None, resume=False, stop_at=None, progress=True):
    """Train (or continue training) and return (model, state) on every process.

    `state` holds the history, token and time counters. With stop_at, training stops after that
    step (checkpoint written), as an interrupted run would. Under torchrun each process calls
    this; only rank 0 writes files and shows progress.
    """
    procs = processes_from_env()
    device = pick_device(device, procs.local_rank)
    if procs.world_size > 1 and not torch.distributed.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if device.type == "cuda":
        tf32_disabled()
    out = Path(out)
    ckpt_path = out / "checkpoint.pt"
    if procs.main:
        out.mkdir(parents=True, exist_ok=True)
    model = build_model(config, device)
    optimizer = build_optimizer(model, config)
    # dropout's masks come from torch's default generator: seeded per process, so each rank drops its
    # own entries and a run is repeatable; a single process's checkpoint also holds its state (--resume)
    torch.manual_seed(config.seed * 1_000_003 + 1 + procs.rank)
    step, state = 0, {"history": {"step": [], "loss": [], "token_accuracy": [], "valid": []},
                      "tokens": 0, "train_time_s": 0.0, "time_to_99_valid_s": None, "resumed_from": None}
    if resume and ckpt_path.exists():
        step, state = load_checkpoint(ckpt_path, model, optimizer, config, device)
        state["resumed_from"] = step
    ddp = model
    if procs.world_size > 1:
        ddp = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    task = get_task(config.task)
    batches = task.TrainingBatches(config.seed)
    valid = task.examples("valid", config.seed, config.n_valid)
    last = config.steps if stop_at is None else min(stop_at, config.steps)
    model.train()  # dropout at config.dropout while training; evaluation and decoding use eval mode
    bar = _progress(config.steps, step, enabled=progress and procs.main)
    hist = state["history"]
    tick, tick_tokens = time.perf_counter(), 0
    while step < last:
        step += 1
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        src, tgt_in, tgt, (n_target, n_source) = global_batch(batches, step, config, procs, device)
        loss, mean_loss, accuracy = loss_and_stats(ddp, src, tgt_in, tgt, n_target, procs.world_size, config.bf16,
                                                   task.PAD)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        tick_tokens += n_target + n_source
        if step % 10 == 0 or step == last or step == 1:
            hist["step"].append(step)
            hist["loss"].append(float(mean_loss))  # synchronises with the device
            hist["token_accuracy"].append(float(accuracy))
            now = time.perf_counter()
            state["train_time_s"] += now - tick
            state["tokens"] += tick_tokens
            if bar is not None:
                bar.set_postfix(loss=f"{hist['loss'][-1]:.3f}", acc=f"{hist['token_accuracy'][-1]:.3f}",
                                tok_s=f"{tick_tokens / max(now - tick, 1e-9):,.0f}", refresh=False)
            tick, tick_tokens = now, 0
        if bar is not None:
            bar.update(1)
        paused = time.perf_counter()  # evaluation and checkpoints are not training time
        if config.eval_every and step % config.eval_every == 0 and step < config.steps and procs.main:
            em = exact_match(model.eval(), valid, device, bf16=config.bf16, task=task)[0]
            model.train()
            hist["valid"].append([step, em])
            if em >= 0.99 and state["time_to_99_valid_s"] is None:
                state["time_to_99_valid_s"] = state["train_time_s"]
            if bar is not None:
                bar.write(f"step {step}: validation exact match {em:.2%}")
        if procs.main and (step % config.checkpoint_every == 0 or step == last):
            save_checkpoint(ckpt_path, model, optimizer, step, config, state)
        tick += time.perf_counter() - paused
    if bar is not None:
        bar.close()
    state["step"] = step
    return model.eval(), state


def _progress(total, initial, enabled):
    if not enabled:
        return None
    from tqdm.auto import tqdm
    return tqdm(total=total, initial=initial, desc="training", unit="step", file=sys.stderr,
                mininterval=0.5, dynamic_ncols=True)
