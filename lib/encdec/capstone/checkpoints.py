"""What a capstone run leaves on disk: the resumable checkpoint (model, optimizer, counters and the
dropout generator, written with torch.save) and the exported weights (float32 arrays with their
configuration in a pickle-free .npz, the form the course ships in data/capstone_dates.npz and
data/capstone_numbers.npz)."""

import json
import os
from pathlib import Path

import numpy as np
import torch

from ..model import ModelConfig
from ..torch_model import Seq2Seq, load_numpy_parameters, numpy_parameters
from .config import TrainConfig
from .tasks import get as get_task
from .tasks import info as task_info

PRETRAINED = task_info("dates").pretrained  # data/capstone_dates.npz
PRETRAINED_NUMBERS = task_info("numbers").pretrained  # data/capstone_numbers.npz


# -- the resumable checkpoint ----------------------------------------------------------------------
def dropout_generator_state(device):
    """The state of the generator dropout draws from on `device` (torch's default one), to checkpoint."""
    device = torch.device(device)
    return torch.cuda.get_rng_state(device) if device.type == "cuda" else torch.get_rng_state()


def set_dropout_generator_state(device, rng_state):
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.set_rng_state(rng_state.cpu(), device)
    else:
        torch.set_rng_state(rng_state.cpu())


def save_checkpoint(path, model, optimizer, step, config, state):
    tmp = Path(str(path) + ".tmp")
    device = next(model.parameters()).device
    torch.save({"step": step, "config": config.to_dict(), "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "state": state,
                "dropout_rng": dropout_generator_state(device)}, tmp)
    os.replace(tmp, path)


def load_checkpoint(path, model, optimizer, config, device):
    """Load a checkpoint into model and optimizer; returns (step, state). Refuses another config."""
    ckpt = torch.load(path, map_location=device, weights_only=True)
    # a checkpoint written before a field existed holds that field's default
    ckpt["config"] = {**{k: v for k, v in TrainConfig().to_dict().items() if k not in ckpt["config"]},
                      **ckpt["config"]}
    if ckpt["config"] != config.to_dict():
        diff = {k: (ckpt["config"].get(k), v) for k, v in config.to_dict().items() if ckpt["config"].get(k) != v}
        raise ValueError(f"{path} was written with a different configuration (saved, requested): {diff}")
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    if "dropout_rng" in ckpt:
        set_dropout_generator_state(device, ckpt["dropout_rng"])
    return ckpt["step"], ckpt["state"]


# -- the exported weights --------------------------------------------------------------------------
def export_weights(model, path, config, summary=None):
    """The weights in float32 with their ModelConfig, as a pickle-free .npz (about 1 MB)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {name: v.astype(np.float32) for name, v in numpy_parameters(model).items()}
    meta = {"model_config": config.model_config().to_dict(), "train_config": config.to_dict(),
            "vocab": get_task(config.task).VOCAB, "summary": summary or {}}
    np.savez_compressed(path, __meta__=np.array(json.dumps(meta)), **arrays)
    return path


def load_weights(path=None, device="cpu", dtype=torch.float32, task=None):
    """A trained torch twin from an exported .npz (default: the checkpoint shipped with the course for
    `task`, the dates task unless told; task="numbers": data/capstone_numbers.npz).

    Returns (model in eval mode, meta dict with model_config, train_config, vocab, summary).
    """
    path = task_info(task or "dates").pretrained if path is None else Path(path)
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["__meta__"]))
        params = {k: data[k] for k in data.files if k != "__meta__"}
    trained_on = meta["train_config"].get("task", "dates")  # weights exported before tasks existed: dates
    if task is not None and trained_on != task:
        raise ValueError(f"{path} holds a model of the {trained_on} task, not of the {task} task")
    if meta["vocab"] != get_task(trained_on).VOCAB:
        raise ValueError(f"{path} was trained with a different vocabulary")
    model = Seq2Seq(ModelConfig(**meta["model_config"])).to(device=device, dtype=dtype)
    return load_numpy_parameters(model, params).eval(), meta
