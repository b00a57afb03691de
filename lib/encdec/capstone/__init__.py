"""The capstone: train the PyTorch twin on the dates task, on a GPU when there is one, and check
that NumPy, torch on the CPU and torch on the GPU compute the same function, up to rounding.

One module per job, in dependency order:

    tasks         the tasks a run trains on, by name: dates (the default) and numbers
    config        TrainConfig and its presets DEFAULT and SMOKE (dates), NUMBERS and NUMBERS_SMOKE
    devices       the device, torchrun's processes, float32 or float64, bf16 autocast, TF32 off
    evaluation    greedy predictions and exact match
    metrics       chrF and BLEU (sacrebleu) on the detokenised predictions
    parity        the parity report: NumPy vs torch vs CUDA on the same weights (no training loop)
    checkpoints   the resumable checkpoint, and the exported .npz weights (load_weights, PRETRAINED)
    training      the model, the optimizer, the learning rate, global batches, the loss and the loop
    report        report.json, model.npz and the printed summary of a finished run
    cli           the command line: `python -m encdec.capstone`, also under torchrun
    translation   the shipped numbers model: translate a number, its cross-attention maps

Every public name of these modules is also a name of the package (`encdec.capstone.train`,
`encdec.capstone.parity_report`, ...), imported on first use: so `import encdec.capstone.parity`
loads the parity report and what it needs, and not the training loop.
"""

import importlib

from .. import dates  # noqa: F401  (encdec.capstone.dates: the task the capstone trains on)

_EXPORTS = {
    "tasks": ["TASKS", "TaskInfo"],
    "config": ["TrainConfig", "DEFAULT", "SMOKE", "NUMBERS", "NUMBERS_SMOKE", "PRESETS"],
    "devices": ["DeviceUnavailable", "Processes", "processes_from_env", "pick_device", "device_name",
                "torch_dtype", "bf16_autocast", "tf32_disabled"],
    "evaluation": ["predict", "exact_match"],
    "metrics": ["chrf", "bleu", "scores"],
    "parity": ["NUMPY_TORCH_TOLERANCE", "BF16_TOLERANCE", "numpy_torch_parity", "device_parity", "bf16_report",
               "parity_report"],
    "checkpoints": ["PRETRAINED", "PRETRAINED_NUMBERS", "dropout_generator_state", "set_dropout_generator_state", "save_checkpoint",
                    "load_checkpoint", "export_weights", "load_weights"],
    "training": ["build_model", "build_optimizer", "learning_rate", "global_batch", "loss_and_stats", "train"],
    "report": ["evaluate_and_report", "summary_lines"],
    "cli": ["dropout_rate", "parse_args", "config_from_args", "main"],
    "translation": ["translate", "cross_attention", "english_source"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    """Load a public name from its module on first use (PEP 562)."""
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_MODULE_OF[name]}", __name__), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__():
    return sorted(set(globals()) | set(_MODULE_OF))
