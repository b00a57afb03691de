"""Fixtures shared by the suite, and the lesson markers: `pytest -m lesson05` runs everything about
Lesson 5 — its library tests, its checker's proofs, its notebook and lesson-structure tests, and the
grading tests on a class narrowed to that lesson."""

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
# `python -m autograder self` in a test grades in its own process: no grader left running after the suite
# (tests/test_self_server.py turns it on, for its own output folders, and stops what it starts).
os.environ.setdefault("GRADE_SERVER", "off")
ALL_LESSONS = [f"{k:02d}" for k in range(1, 11)]

# Library test modules and the lessons that teach what they test.
MODULE_LESSONS = {
    "test_attention": ["01", "02", "03", "04"], "test_errors": ["01", "02", "03", "04", "05", "06"],
    "test_layers": ["02", "05"], "test_model": ["03", "06"], "test_backward": ["07"], "test_toy": ["06", "08"],
    "test_optim": ["08", "10"], "test_dropout": ["08"], "test_decoding": ["09"], "test_capstone": ["10"],
    "test_ddp": ["10"],
}
# Tests about the whole course: they run for any lesson, on that lesson alone (COURSE_LESSONS below).
WHOLE_COURSE = {"test_grading_e2e", "test_mutation", "test_adversarial", "test_grading_records", "test_notebooks",
                "test_declarations"}
LESSON_IN_ID = re.compile(r"(?:^|[\[\-_])(\d\d)_[a-z]|lesson(\d\d)|course_map_(\d\d)")


@pytest.fixture
def one_thread():
    """torch on one thread for the test (small matrices: one thread is as fast, and stays fast when the
    test workers share the cores); the number before is put back after it."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def pytest_configure(config):
    """`-m lesson05` (or `-m "lesson05 or lesson06"`) grades only those lessons in the grading tests."""
    expression = config.option.markexpr or ""
    chosen = re.findall(r"lesson(\d\d)", expression)
    if chosen and "not" not in expression.split() and "COURSE_LESSONS" not in os.environ:
        # the grading class needs two lessons, and plays its adversaries on Lesson 1: keep it alongside
        companion = ["01"] if chosen != ["01"] else ["02"]
        os.environ["COURSE_LESSONS"] = ",".join(sorted(set(chosen + companion)))


def _figures_by_lesson():
    """{figure name: lessons whose source shows it}, for the diagram tests."""
    shown = {}
    for source in (ROOT / "authoring").glob("[0-9][0-9]_*.py"):
        for name in re.findall(r"\.\./figures/([\w-]+)\.svg", source.read_text()):
            shown.setdefault(name, set()).add(source.name[:2])
    return shown


def pytest_collection_modifyitems(config, items):
    figures = None
    for item in items:
        if any(re.fullmatch(r"lesson\d\d", m.name) for m in item.iter_markers()):
            continue
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        found = {a or b or c for a, b, c in LESSON_IN_ID.findall(item.name)}
        if not found and module == "test_diagrams":
            figures = figures if figures is not None else _figures_by_lesson()
            found = {lesson for name, lessons in figures.items() if f"[{name}]" in item.name for lesson in lessons}
        if not found:
            found = set(MODULE_LESSONS.get(module, ALL_LESSONS if module in WHOLE_COURSE else []))
        for lesson in sorted(found):
            if lesson in ALL_LESSONS:
                item.add_marker(getattr(pytest.mark, f"lesson{lesson}"))

def pytest_terminal_summary(terminalreporter):
    """What was skipped, grouped by reason, appended to the file $TEST_SKIPS names: `make test` runs
    pytest twice and ends with the two runs' skips together (tools/system_packages.py summary)."""
    path = os.environ.get("TEST_SKIPS")
    if not path:
        return
    counts = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        counts[reason] = counts.get(reason, 0) + 1
    import json
    with open(path, "a") as f:
        for reason, count in counts.items():
            f.write(json.dumps({"reason": reason, "count": count}) + "\n")


import encdec  # noqa: E402
# Every parameter random, no all-ones gammas or zero biases that hide mistakes: the checkers' own
# randomize, which the tests import from here.
from encdec.checks.fixtures import randomize  # noqa: E402


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def small_model(rng):
    model = encdec.Seq2Seq(vocab_size=17, d_model=16, n_heads=4, d_ff=24,
                           n_encoder_layers=2, n_decoder_layers=2, pad_id=0, rng=7)
    randomize(model.parameters(), rng)
    return model


@pytest.fixture
def batch():
    """Right-padded source and target ids (pad 0, BOS 1, EOS 2), n != m."""
    src = np.array([[3, 4, 5, 6, 7, 0, 0], [8, 9, 10, 11, 12, 13, 14]])
    tgt = np.array([[5, 6, 7, 2, 0], [9, 10, 11, 12, 2]])
    return src, tgt


@pytest.fixture(scope="session")
def small_model_session():
    model = encdec.Seq2Seq(vocab_size=17, d_model=16, n_heads=4, d_ff=24,
                           n_encoder_layers=2, n_decoder_layers=2, pad_id=0, rng=7)
    randomize(model.parameters(), np.random.default_rng(99))
    return model


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory):
    """The fixture class (tests/grading_class.py), graded once through the real driver (skipped, with
    the reason, where the sandbox it grades in cannot run)."""
    from grading_class import build_and_grade
    from nbtools import require_sandbox
    require_sandbox()
    return build_and_grade(tmp_path_factory)

