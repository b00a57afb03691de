"""Lesson 10's project (§10.16) and its check, Exercise 10.8 (0 points): the check reads the report, loads
the checkpoint it names and decodes 100 test examples again; it passes an honest report (the shipped
example run, and a run of the lesson's own training loop) and names each inconsistency: a claimed exact
match the checkpoint does not reach, steps over the budget, a model larger than the default, a
configuration other than the one reported, a missing or unreadable checkpoint, fields missing or of the
wrong kind. The lesson's training cell does not train unless told to."""

import contextlib
import dataclasses
import io
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from encdec import capstone
from encdec.checks import lesson10 as L
from encdec.checks.record import collected

pytestmark = [pytest.mark.lesson10, pytest.mark.usefixtures("one_thread")]
ROOT = Path(__file__).resolve().parents[1]


def items(report):
    return {label: (ok, message) for label, ok, message in L.review_project(report)}


def failing(report):
    return {label: message for label, (ok, message) in items(report).items() if not ok}


def graded(report):
    with collected() as records, contextlib.redirect_stdout(io.StringIO()) as out:
        score = L.check_project_report(report)
    return float(score), records[-1], out.getvalue()


def tiny(steps=4, batch_size=8, **changes):
    """A TrainConfig of the numbers task for a model small enough to save in a test."""
    return dataclasses.replace(capstone.NUMBERS, steps=steps, batch_size=batch_size, d_model=16, n_heads=2, d_ff=32,
                               n_encoder_layers=1, n_decoder_layers=1, warmup=2, **changes)


def saved_run(tmp_path, config, step=None, losses=(3.5, 3.1), name="run.pt"):
    """An untrained model saved with capstone.save_checkpoint as after `step` steps, with `losses` recorded."""
    model = capstone.build_model(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
    path = tmp_path / name
    history = {"step": list(range(1, len(losses) + 1)), "loss": list(losses)}
    capstone.save_checkpoint(path, model, optimizer, config.steps if step is None else step, config,
                             {"history": history})
    return path, model


def honest(path, config, model, steps=None, losses=(3.5, 3.1)):
    """The report that describes the saved run truthfully (its exact match measured on the whole test set)."""
    exact = capstone.exact_match(model.eval(), L._task_module(config.task).examples("test", n=300), device="cpu",
                                 task=config.task)[0]
    return {"task": config.task, "steps": config.steps if steps is None else steps, "lr": config.lr,
            "warmup": config.warmup, "final_loss": losses[-1], "test_exact_match": exact, "checkpoint": str(path),
            "experiment": "nothing changed, a test run", "finding": "an untrained model gets nothing right"}


# -- an honest report -------------------------------------------------------------------------------------
def test_the_shipped_example_run_passes_every_item_and_is_named_as_the_course_s():
    report = L.example_report()
    assert Path(report["checkpoint"]) == L.EXAMPLE_RUN and L.EXAMPLE_RUN.stat().st_size < 400_000
    assert all(ok for ok, _ in items(report).values()), items(report)
    score, record, text = graded(report)
    assert score == 0 and record["points"] == 0 and record["status"] == "checked"
    assert [p["passed"] for p in record["parts"]] == [True] * 5
    assert "the course's example run" in text and "All checks pass." in text
    assert "[0 / 0]" not in text  # parts of a 0-point check are shown without their worth


def test_the_example_report_says_what_its_file_recorded():
    with np.load(L.EXAMPLE_RUN, allow_pickle=False) as data:
        meta = json.loads(str(data["__meta__"]))
    report, summary = L.example_report(), meta["summary"]
    assert report["final_loss"] == round(summary["history"]["loss"][-1], 4)
    assert report["steps"] == summary["steps"] == len(summary["history"]["loss"])
    config = meta["train_config"]
    assert (report["lr"], report["warmup"], report["task"]) == (config["lr"], config["warmup"], config["task"])
    assert report["steps"] * config["batch_size"] <= L.PROJECT_BUDGET
    assert all(f"{x:.1%}" in report["finding"] for x in (report["test_exact_match"],))


def test_an_honest_report_of_a_saved_checkpoint_passes(tmp_path):
    config = tiny()
    path, model = saved_run(tmp_path, config)
    report = honest(path, config, model)
    assert failing(report) == {}


def test_the_check_takes_under_two_seconds_on_the_example():
    """The lesson's "under 2 s on a CPU", in this process's CPU time (a busy machine slows the wall clock)."""
    report = L.example_report()
    L.review_project(report)  # the first call imports what the check needs
    start = time.process_time()
    L.review_project(report)
    assert time.process_time() - start < 2.0


# -- inconsistent reports ---------------------------------------------------------------------------------------
def test_a_claimed_exact_match_the_checkpoint_does_not_reach_is_named():
    report = dict(L.example_report(), test_exact_match=0.6)
    bad = failing(report)
    assert list(bad) == ["the exact match it claims, measured again"]
    assert "claims 60.0%" in bad["the exact match it claims, measured again"]
    assert "not what this checkpoint does" in bad["the exact match it claims, measured again"]


def test_the_tolerance_is_a_sampling_tolerance():
    assert L.exact_match_tolerance(1.0, 1.0) == pytest.approx(0.02)
    assert L.exact_match_tolerance(0.5, 0.9) == pytest.approx(0.02 + 3 * math.sqrt(0.25 / 100))
    assert L.exact_match_tolerance(0.99, 0.96) < 0.09


def test_steps_over_the_budget_are_named(tmp_path):
    config = tiny(steps=400, batch_size=128)  # 51,200 examples
    path, model = saved_run(tmp_path, config)
    bad = failing(honest(path, config, model))
    assert list(bad) == ["within the budget"]
    assert "51,200 training examples, more than the budget of 40,000" in bad["within the budget"]


def test_a_model_larger_than_the_default_is_named(tmp_path):
    config = dataclasses.replace(tiny(), d_model=96, n_heads=4, d_ff=384, n_encoder_layers=2, n_decoder_layers=2)
    path, model = saved_run(tmp_path, config)
    bad = failing(honest(path, config, model))
    assert list(bad) == ["within the budget"] and "more than the default model's 239,616" in bad["within the budget"]


@pytest.mark.parametrize("field,value,says", [
    ("lr", 0.01, "lr: the report says 0.01, the checkpoint's configuration 0.002"),
    ("warmup", 0, "warmup: the report says 0, the checkpoint's configuration 2"),
    ("steps", 3, "steps: the report says 3, the checkpoint was saved after 4"),
    ("task", "dates", "task: the report says 'dates', the checkpoint 'numbers'"),
    ("final_loss", 0.5, "final_loss: the report says 0.5, the checkpoint recorded 3.1"),
])
def test_a_report_of_another_configuration_is_named(tmp_path, field, value, says):
    config = tiny()
    path, model = saved_run(tmp_path, config)
    bad = failing(dict(honest(path, config, model), **{field: value}))
    assert says in bad["the checkpoint is the run the report describes"], bad


def test_a_rounded_final_loss_is_accepted(tmp_path):
    config = tiny()
    path, model = saved_run(tmp_path, config, losses=(3.5, 3.14159))
    assert failing(dict(honest(path, config, model), final_loss=3.14)) == {}


def test_a_missing_checkpoint_is_named_while_practising_and_while_grading(tmp_path, monkeypatch):
    report = dict(L.example_report(), checkpoint=str(tmp_path / "nowhere.pt"))
    bad = failing(report)
    assert "no file at" in bad["the checkpoint loads, with its configuration"]
    assert all(m.startswith("not checked") for label, m in bad.items() if label != "the checkpoint loads, with its configuration")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    bad = failing(report)
    assert "the grader receives your notebook alone" in bad["the checkpoint loads, with its configuration"]


def test_a_bare_state_dict_and_a_file_that_is_no_checkpoint_are_named(tmp_path):
    model = capstone.build_model(tiny())
    torch.save(model.state_dict(), tmp_path / "weights.pt")
    (tmp_path / "notes.pt").write_text("not a checkpoint")
    for name, says in (("weights.pt", "a bare state_dict says nothing of the run"), ("notes.pt", "could not be read")):
        bad = failing(dict(L.example_report(), checkpoint=str(tmp_path / name)))
        assert says in bad["the checkpoint loads, with its configuration"], bad


@pytest.mark.parametrize("change,says", [
    ({"test_exact_match": 93.0}, "a fraction between 0 and 1 (0.93, not 93)"),
    ({"task": "french"}, "task should be 'numbers' or 'dates'"),
    ({"steps": 2.5}, "steps should be a whole number"),
    ({"experiment": ""}, "experiment should say in a sentence what you changed"),
    ({"checkpoint": None}, "checkpoint should be the path"),
])
def test_fields_of_the_wrong_kind_are_named(change, says):
    bad = failing(dict(L.example_report(), **change))
    assert says in bad["the report: every field, of its kind"], bad
    assert all(m.startswith("not checked") for label, m in bad.items() if label != "the report: every field, of its kind")


def test_an_unanswered_or_partly_answered_report():
    stub = {field: ... for field in L.PROJECT_FIELDS}
    score, record, text = graded(stub)
    assert record["status"] == "not implemented" and "not answered yet" in text and "All checks pass" not in text
    partly = dict(L.example_report(), finding=..., experiment=...)
    score, record, text = graded(partly)
    assert "fields missing (or still `...`): experiment, finding" in text and "All checks pass" not in text
    for junk in ([1, 2], "a report", 3.0):
        score, record, text = graded(junk)
        assert score == 0 and not record["parts"][0]["passed"]


# -- the lesson's training loop ------------------------------------------------------------------------------
def lesson_loop():
    """The lesson's training loop, train_run, defined from its cell as tools/project_example.py runs it."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("project_example", ROOT / "tools" / "project_example.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    namespace = {"time": time, "torch": torch, "capstone": capstone, "yours_or_ours": L.yours_or_ours}
    exec(compile(tool.training_loop_source(), "the project's training loop", "exec"), namespace)
    return namespace["train_run"]


def test_the_lesson_loop_checkpoints_resumes_and_reports_what_the_check_accepts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train_run = lesson_loop()
    config = tiny(steps=6)
    with contextlib.redirect_stdout(io.StringIO()):
        first = train_run(config, "short", checkpoint_every=4)
    ckpt = torch.load(tmp_path / "project_runs" / "short.pt", weights_only=True)
    assert ckpt["step"] == 6 and len(ckpt["state"]["history"]["loss"]) == 6
    report = {**{k: first[k] for k in ("task", "steps", "lr", "warmup", "final_loss", "test_exact_match")},
              "checkpoint": first["checkpoint"], "experiment": "a short test run", "finding": "it ran end to end"}
    assert failing(report) == {}
    with contextlib.redirect_stdout(io.StringIO()):
        again = train_run(config, "short")  # resumes at step 6: nothing left to train
    assert again["final_loss"] == first["final_loss"] and again["test_exact_match"] == first["test_exact_match"]
    with pytest.raises(ValueError, match="different configuration"):
        with contextlib.redirect_stdout(io.StringIO()):
            train_run(dataclasses.replace(config, lr=1e-3), "short")


def test_the_training_cell_trains_only_when_told():
    text = (ROOT / "authoring" / "10_capstone.py").read_text(encoding="utf-8")
    cells = text.split("\n# %%")
    choices = [c for c in cells if "\nTRAIN = " in c]
    assert len(choices) == 1 and choices[0].startswith(" [demo]") and "\nTRAIN = False\n" in choices[0]
    loop = [c for c in cells if "# The project's training loop." in c]
    assert len(loop) == 1 and loop[0].startswith(" [demo]")
    assert "BUDGET = 40_000" in choices[0] and L.PROJECT_BUDGET == 40_000


def test_the_budget_allows_the_default_model_its_learning():
    """The lesson says the default model can learn the task within the budget: 300 steps of 128 fit it."""
    assert 300 * 128 <= L.PROJECT_BUDGET < 400 * 128
    assert L.default_parameters("numbers") == 239_616 and L.default_parameters("dates") == 235_904
