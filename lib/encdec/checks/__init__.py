"""Checkers used by the notebooks' nbgrader test cells: tests that teach.

Import the lesson's module in a test cell, e.g. `from encdec.checks.lesson01 import check_softmax`.
"""

from .core import Case, Checker, compare, rebind, run_student  # noqa: F401
from .ordering import Ordering, Step  # noqa: F401
