"""Who runs the checks: a student practising, or the grader.

A student runs cells one at a time, so an answer that is not defined usually means its cell has
not been run yet, and the check says so. The grader has already run every cell of the notebook,
so that advice would be wrong there: an answer that is not defined is missing from the submitted
notebook. Two signals say that the grader runs the kernel:
- the course's grader (`make grade`, `make autograde`, `make validate`) starts its kernels with
  `start_grading()` (autograder/nbgrader_config.py, `Execute.extra_arguments`);
- nbgrader itself sets NBGRADER_EXECUTION ("autograde" or "validate") for the kernels it starts,
  so the Validate button of a student's JupyterLab counts as grading too.
"""

import os

_grading = False


def start_grading():
    """Called once by the grader's kernels, before the first cell."""
    global _grading
    _grading = True


def grading():
    """True inside a kernel that the grader (or nbgrader's validator) started."""
    return _grading or os.environ.get("NBGRADER_EXECUTION") in ("autograde", "validate")


def not_defined(name, kind="function"):
    """What a check says when the notebook defines no `kind` named `name`."""
    if grading():
        return (f"no {kind} named `{name}` is defined in the submitted notebook: its answer cell must "
                f"define `{name}`, under that name, and run without an error.")
    return (f"no {kind} named `{name}` is defined. Run the cell that defines it "
            f"(and keep the name `{name}`), then run this test again.")
