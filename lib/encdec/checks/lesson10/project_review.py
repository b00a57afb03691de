"""Exercise 10.8's review of the project's report: the report's fields, the run its checkpoint records
(read_run), the budget, and the exact match measured again (review_project)."""

import math
from pathlib import Path

import numpy as np


# The project (§10.16) trains outside grading: the check reads the report, loads the checkpoint the report
# names, decodes RECHECK test examples again with it and compares. It is worth 0 points: the grader receives
# the notebook alone, never the student's checkpoint, and a report cannot prove whose run it describes.
PROJECT_BUDGET = 40_000  # training examples per run, steps x batch size (300 steps of 128 is 38,400)
RECHECK = 100  # test examples decoded again by the check (the first 100 of the task's fixed test order)
PROJECT_TASKS = ("numbers", "dates")
PROJECT_FIELDS = ("task", "steps", "lr", "warmup", "final_loss", "test_exact_match", "checkpoint", "experiment",
                  "finding")
EXAMPLE_RUN = Path(__file__).resolve().parents[2] / "data" / "project_example.npz"  # lib/encdec/data


def exact_match_tolerance(claimed, measured, n=RECHECK):
    """How far a claimed exact match may be from the one measured again on n test examples: 0.02 plus three
    standard errors of an n-example sample (the larger of the two the figures imply)."""
    spread = max(claimed * (1 - claimed), measured * (1 - measured), 0.0)
    return 0.02 + 3 * math.sqrt(spread / n)


def _task_module(name):
    from ...capstone.tasks import get
    return get(name)


def default_parameters(task):
    """Parameters of the capstone's default model for `task` (the project's largest allowed model)."""
    from ...capstone import config as capstone_config
    return parameter_total(capstone_config.PRESETS[(task, False)].model_config())


def parameter_total(model_config):
    from ...model import parameter_count
    c = model_config
    return parameter_count(c.vocab_size, c.d_model, c.d_ff, c.n_encoder_layers, c.n_decoder_layers)


def read_run(path):
    """What a checkpoint says of its run: {"path", "config" (a TrainConfig), "steps" (done), "losses" (the
    recorded training losses, or None), "model" (the torch model, eval mode)}. Reads the resumable checkpoint
    of capstone.save_checkpoint (.pt, torch.load with weights_only) and the weights of capstone.export_weights
    (.npz, no pickle). Raises ValueError with a message for the student."""
    import dataclasses

    import torch
    from ...capstone.config import TrainConfig
    from ...torch_model import Seq2Seq as TorchSeq2Seq
    path = Path(path)
    fields = {f.name for f in dataclasses.fields(TrainConfig)}

    def config_of(saved):
        saved = dict(saved)
        unknown = sorted(set(saved) - fields)
        if unknown:
            raise ValueError(f"{path.name} records a configuration with fields TrainConfig does not have: {unknown}")
        if "betas" in saved:
            saved["betas"] = tuple(saved["betas"])
        return TrainConfig(**saved)

    if path.suffix == ".npz":
        from ...capstone.checkpoints import load_weights
        model, meta = load_weights(path)
        config = config_of(meta["train_config"])
        summary = meta.get("summary") or {}
        history = summary.get("history") or {}
        return {"path": path, "config": config, "steps": int(summary.get("steps", config.steps)),
                "losses": history.get("loss"), "model": model.eval()}
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ValueError(f"{path.name} could not be read as a torch checkpoint ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:120] if str(exc) else ''})") from None
    if not isinstance(ckpt, dict) or not {"config", "step", "model"} <= set(ckpt):
        raise ValueError(f"{path.name} is not a checkpoint of capstone.save_checkpoint: it must hold the step, "
                         "the configuration and the model (a bare state_dict says nothing of the run)")
    config = config_of(ckpt["config"])
    model = TorchSeq2Seq(config.model_config())
    model.load_state_dict(ckpt["model"])
    state = ckpt.get("state") or {}
    history = state.get("history") or {} if isinstance(state, dict) else {}
    return {"path": path, "config": config, "steps": int(ckpt["step"]), "losses": history.get("loss"),
            "model": model.float().eval()}


def _is_number(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and math.isfinite(x)


def _fields_problem(report):
    """'' when every field is there and of its kind, else what is wrong, in the student's words."""
    if not isinstance(report, dict):
        return f"`project_report` should be a dict with the fields {', '.join(PROJECT_FIELDS)}; got {type(report).__name__}"
    missing = [k for k in PROJECT_FIELDS if k not in report]
    if missing:
        return f"fields missing (or still `...`): {', '.join(missing)}"
    problems = []
    if report["task"] not in PROJECT_TASKS:
        problems.append(f"task should be 'numbers' or 'dates', got {report['task']!r}")
    if not (_is_number(report["steps"]) and int(report["steps"]) == report["steps"] and report["steps"] > 0):
        problems.append(f"steps should be a whole number of steps, got {report['steps']!r}")
    if not (_is_number(report["lr"]) and report["lr"] > 0):
        problems.append(f"lr should be the peak learning rate, a positive number, got {report['lr']!r}")
    if not (_is_number(report["warmup"]) and int(report["warmup"]) == report["warmup"] and report["warmup"] >= 0):
        problems.append(f"warmup should be a whole number of steps (0 for none), got {report['warmup']!r}")
    if not (_is_number(report["final_loss"]) and report["final_loss"] >= 0):
        problems.append(f"final_loss should be the training loss of the last step, got {report['final_loss']!r}")
    if not (_is_number(report["test_exact_match"]) and 0 <= report["test_exact_match"] <= 1):
        problems.append("test_exact_match should be a fraction between 0 and 1 (0.93, not 93), got "
                        f"{report['test_exact_match']!r}")
    if not (isinstance(report["checkpoint"], str) and report["checkpoint"].strip()):
        problems.append("checkpoint should be the path of your checkpoint, a string")
    for key in ("experiment", "finding"):
        if not (isinstance(report[key], str) and len(report[key].split()) >= 3):
            problems.append(f"{key} should say in a sentence what you {'changed' if key == 'experiment' else 'found'}")
    return "; ".join(problems)


def review_project(report):
    """The project check's items: [(label, ok, message)], each with its feedback (also for a passing item
    when there is something to say). Never raises."""
    items = []
    problem = _fields_problem(report)
    items.append(("the report: every field, of its kind", not problem, problem))
    if problem:
        rest = "not checked: the report's fields come first"
        return items + [(label, False, rest) for label in _PROJECT_LABELS[1:]]
    path = Path(report["checkpoint"]).expanduser()
    from .. import mode
    try:
        if not path.exists():
            where = ("the grader receives your notebook alone, not the files beside it: the items that need "
                     "the checkpoint are checked when you run this cell yourself" if mode.grading() else
                     f"no file at {str(path)!r} (relative paths start in this notebook's folder, "
                     f"{str(Path.cwd())!r}): give the path your training cell printed")
            raise ValueError(where)
        run = read_run(path)
    except Exception as exc:
        message = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        items.append(("the checkpoint loads, with its configuration", False, message))
        return items + [(label, False, "not checked: no checkpoint to check it on") for label in _PROJECT_LABELS[2:]]
    config = run["config"]
    items.append(("the checkpoint loads, with its configuration", True,
                  f"{path.name}: task {config.task}, {run['steps']} steps of {config.batch_size}, peak lr {config.lr:g}, "
                  f"warm-up {config.warmup}, d_model {config.d_model}"))
    # the run the report describes
    differ = []
    if config.task != report["task"]:
        differ.append(f"task: the report says {report['task']!r}, the checkpoint {config.task!r}")
    if run["steps"] != report["steps"]:
        differ.append(f"steps: the report says {report['steps']}, the checkpoint was saved after {run['steps']}")
    if not math.isclose(config.lr, report["lr"], rel_tol=1e-6):
        differ.append(f"lr: the report says {report['lr']:g}, the checkpoint's configuration {config.lr:g}")
    if config.warmup != report["warmup"]:
        differ.append(f"warmup: the report says {report['warmup']}, the checkpoint's configuration {config.warmup}")
    losses = run["losses"]
    if losses:
        last = float(losses[-1])
        if not math.isclose(last, report["final_loss"], rel_tol=0.01, abs_tol=5e-5):
            differ.append(f"final_loss: the report says {report['final_loss']:g}, the checkpoint recorded "
                          f"{last:.4g} at its last step")
    note = "" if losses else "the checkpoint records no losses, so final_loss is not compared"
    items.append(("the checkpoint is the run the report describes", not differ, "; ".join(differ) or note))
    # the budget
    examples = run["steps"] * config.batch_size
    allowed = default_parameters(config.task)
    size = parameter_total(config.model_config())
    over = []
    if examples > PROJECT_BUDGET:
        over.append(f"{run['steps']} steps of {config.batch_size} are {examples:,} training examples, more than the "
                    f"budget of {PROJECT_BUDGET:,}")
    if size > allowed:
        over.append(f"the model has {size:,} parameters, more than the default model's {allowed:,}")
    items.append(("within the budget", not over, "; ".join(over) or
                  f"{examples:,} of {PROJECT_BUDGET:,} training examples; {size:,} parameters"))
    # the exact match, measured again
    from ...capstone.evaluation import exact_match
    examples_again = _task_module(config.task).examples("test", n=RECHECK)
    measured = exact_match(run["model"], examples_again, device="cpu", task=config.task)[0]
    claimed = float(report["test_exact_match"])
    tolerance = exact_match_tolerance(claimed, measured)
    ok = abs(claimed - measured) <= tolerance
    items.append(("the exact match it claims, measured again", ok,
                  f"the report claims {claimed:.1%}; decoded again, the checkpoint gets {measured:.1%} of the first "
                  f"{RECHECK} test examples (the two may differ by {100 * tolerance:.1f} percentage points)" +
                  ("" if ok else ": the claim is not what this checkpoint does")))
    return items


_PROJECT_LABELS = ["the report: every field, of its kind", "the checkpoint loads, with its configuration",
                   "the checkpoint is the run the report describes", "within the budget",
                   "the exact match it claims, measured again"]
