"""Where a capstone run computes: the device, the processes of a torchrun launch, and the numeric
modes torch runs in there (float32 or float64, bf16 autocast, TF32 off)."""

import os
import platform
from dataclasses import dataclass

import torch


class DeviceUnavailable(RuntimeError):
    """The requested device does not exist on this machine."""


@dataclass
class Processes:
    """Where this process sits in a torchrun launch (rank 0 of 1 without one)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def main(self):
        return self.rank == 0


def processes_from_env():
    return Processes(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)),
                     int(os.environ.get("LOCAL_RANK", 0)))


def pick_device(requested=None, local_rank=0):
    """'cuda' when available, else 'cpu'; a requested 'cuda' without a GPU raises DeviceUnavailable."""
    if requested in (None, "auto"):
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(requested)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailable(
                f"--device {requested} was requested, but torch {torch.__version__} sees no CUDA GPU "
                f"(torch.cuda.is_available() is False). Run on a machine with an NVIDIA GPU and a CUDA "
                f"build of torch, or leave out --device to train on the CPU.")
        if device.index is None:
            device = torch.device("cuda", local_rank)
    return device


def device_name(device):
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return f"CPU: {line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"CPU: {platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


def torch_dtype(name):
    """torch.float32 or torch.float64 from its name (TrainConfig.dtype)."""
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {name!r}")
    return getattr(torch, name)


def bf16_autocast(device, enabled):
    """bf16 autocast on `device` when enabled, a no-op context otherwise."""
    return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16, enabled=enabled)


def tf32_disabled():
    """Matmuls and convolutions in true float32 on CUDA (TF32 would round their inputs to 10 stored
    mantissa bits, 11 significant, against float32's 23 stored)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
