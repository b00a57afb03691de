"""The parity report: the same weights evaluated by NumPy, by torch on the CPU and by torch on CUDA
compute the same function, up to rounding.

NumPy float64 against torch float64 on the CPU, with the weights moved losslessly, must agree to
1e-9 in the logits; torch float32 on the CPU against torch float32 on CUDA (TF32 disabled) is
reported as max |delta logits| and whether greedy outputs on the test split are identical. bf16
autocast is reported on its own, never mixed in. Every figure compares models in eval mode,
dropout off. Nothing here trains: Lesson 10 and `make bench` use this module on trained weights.
"""

import copy

import numpy as np
import torch

from ..decoding import greedy_decode as numpy_greedy_decode
from ..model import shift_right
from ..torch_model import to_numpy
from .devices import bf16_autocast, device_name, tf32_disabled
from .evaluation import predict
from .tasks import get as get_task

NUMPY_TORCH_TOLERANCE = 1e-9  # float64 against float64: only rounding differs (sum order, exp and tanh)
BF16_TOLERANCE = 0.5  # max |delta logits|, bf16 autocast vs float32 (bf16 keeps 8 significant bits, 7 stored)


def _logits(model, src, tgt_in, device, dtype, bf16=False):
    """(an eval-mode copy of model on device in dtype, its float64 logits (b, m, V) on the CPU)."""
    twin = copy.deepcopy(model).to(device=device, dtype=dtype).eval()
    with torch.no_grad(), bf16_autocast(device, bf16):
        out = twin(torch.from_numpy(src).to(device), torch.from_numpy(tgt_in).to(device))
    return twin, out.to("cpu", torch.float64).numpy()


def _parity_batch(examples, task=None):
    task = get_task(task)
    src, tgt = task.encode_pairs([s for s, _, _ in examples], [t for _, t, _ in examples])
    return src, shift_right(tgt, task.BOS)


def numpy_torch_parity(model, examples, task=None):
    """NumPy float64 against torch float64 on the CPU, same weights (moved losslessly).

    Returns {max_abs_diff_logits, tolerance, passed, greedy_identical, examples}.
    """
    task = get_task(task)
    src, tgt_in = _parity_batch(examples, task)
    np_model = to_numpy(model).eval()  # float64 copies of the weights, exactly; no dropout
    twin, torch_logits = _logits(model, src, tgt_in, "cpu", torch.float64)
    diff = float(np.max(np.abs(np_model(src, tgt_in) - torch_logits)))
    np_out = numpy_greedy_decode(np_model, src, task.BOS, task.EOS, task.TARGET_LEN)
    torch_out = predict(twin, [s for s, _, _ in examples], "cpu", task=task)
    same = [task.decode(a) for a in np_out] == torch_out
    return {"compared": "NumPy float64 vs torch float64 on the CPU, same weights",
            "max_abs_diff_logits": diff, "tolerance": NUMPY_TORCH_TOLERANCE,
            "passed": diff <= NUMPY_TORCH_TOLERANCE, "greedy_identical": bool(same), "examples": len(examples)}


def device_parity(model, examples, device="cuda", n_logits=256, task=None):
    """Torch float32 on the CPU against float32 on `device`, TF32 disabled, same weights.

    Returns {max_abs_diff_logits (first n_logits examples), greedy_identical (all examples),
    greedy_differences}.
    """
    tf32_disabled()
    src, tgt_in = _parity_batch(examples[:n_logits], task)
    cpu_twin, cpu_logits = _logits(model, src, tgt_in, "cpu", torch.float32)
    dev_twin, dev_logits = _logits(model, src, tgt_in, device, torch.float32)
    sources = [s for s, _, _ in examples]
    cpu_out, dev_out = predict(cpu_twin, sources, "cpu", task=task), predict(dev_twin, sources, device, task=task)
    differences = sum(a != b for a, b in zip(cpu_out, dev_out))
    return {"compared": f"torch float32 on the CPU vs float32 on {device} (TF32 disabled), same weights",
            "available": True, "device_name": device_name(device),
            "max_abs_diff_logits": float(np.max(np.abs(cpu_logits - dev_logits))),
            "logits_examples": len(src), "greedy_identical": differences == 0,
            "greedy_differences": int(differences), "examples": len(examples)}


def bf16_report(model, examples, device, n_logits=256, task=None):
    """bf16 autocast against float32 on the same device: its own figure and its own tolerance."""
    src, tgt_in = _parity_batch(examples[:n_logits], task)
    _, f32 = _logits(model, src, tgt_in, device, torch.float32)
    twin, bf = _logits(model, src, tgt_in, device, torch.float32, bf16=True)
    diff = float(np.max(np.abs(f32 - bf)))
    sources = [s for s, _, _ in examples]
    agree = np.mean([a == b for a, b in zip(predict(twin, sources, device, task=task),
                                            predict(twin, sources, device, bf16=True, task=task))])
    return {"compared": f"bf16 autocast vs float32 on {device}, same weights", "device_name": device_name(device),
            "max_abs_diff_logits": diff, "tolerance": BF16_TOLERANCE, "passed": diff <= BF16_TOLERANCE,
            "greedy_agreement": float(agree), "examples": len(examples)}


def parity_report(model, examples, n_numpy=64, bf16_device=None, task=None):
    """Every parity figure of the capstone (JSON-ready). CUDA figures only where CUDA exists.

    Every figure compares models in eval mode, dropout off: each comparison runs on copies put in
    eval mode (`_logits`, `to_numpy(...).eval()`), whatever the mode of `model`.
    """
    report = {"numpy_float64_vs_torch_float64_cpu": numpy_torch_parity(model, examples[:n_numpy], task)}
    if torch.cuda.is_available():
        report["cpu_float32_vs_cuda_float32"] = device_parity(model, examples, "cuda", task=task)
    else:
        report["cpu_float32_vs_cuda_float32"] = {
            "available": False,
            "note": "no CUDA GPU on this machine, so the CPU/GPU comparison was not run; "
                    "run `make gpu-check` on a machine with a GPU to produce it"}
    if bf16_device is not None:
        report["bf16_autocast_vs_float32"] = bf16_report(model, examples, bf16_device, task=task)
    return report
