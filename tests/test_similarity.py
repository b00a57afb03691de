"""Close copies of the reference, found on the normalised syntax tree: a renamed, reformatted copy
is found; a different correct answer and the untouched release are not."""

import nbformat
import pytest

from autograder import similarity
from nbtools import COURSE, SOLUTIONS, cell, release, solution

L1 = "01_attention"
pytestmark = pytest.mark.lesson01

RENAMED_COPY = '''def softmax(x, axis=-1):
    """Mine."""
    ### BEGIN SOLUTION
    values = np.asarray(x, dtype=np.float64)
    moved = values - np.max(values, axis=axis, keepdims=True)   # reformatted, renamed
    ex = np.exp(moved)
    return ex / np.sum(ex, axis=axis, keepdims=True)
    ### END SOLUTION
'''
DIFFERENT = '''def softmax(x, axis=-1):
    """Mine."""
    z = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    z = z - z.max(-1, keepdims=True)
    out = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    return np.moveaxis(out, -1, axis)
'''


def notebook_with(tmp_path, source):
    nb = release(L1)
    cell(nb, "softmax").source = source
    path = tmp_path / f"{L1}.ipynb"
    nbformat.write(nb, str(path))
    return path


def softmax_hits(path):
    return [hit for hit in similarity.close_copies(path, L1, SOLUTIONS, COURSE) if hit[0] == "1.1 softmax"]


def test_a_renamed_reformatted_copy_is_found(tmp_path):
    sol = cell(solution(L1), "softmax").source
    assert "shifted" in sol and "values" not in sol  # the copy really renames the solution's names
    hits = softmax_hits(notebook_with(tmp_path, RENAMED_COPY))
    assert hits and hits[0][2] >= similarity.THRESHOLD, hits


def test_a_different_correct_answer_and_the_release_are_not_flagged(tmp_path):
    assert softmax_hits(notebook_with(tmp_path, DIFFERENT)) == []
    path = tmp_path / "release.ipynb"
    nbformat.write(release(L1), str(path))
    assert similarity.close_copies(path, L1, SOLUTIONS, COURSE) == []


def test_the_solution_itself_is_flagged_for_every_exercise(tmp_path):
    path = tmp_path / "solution.ipynb"
    nbformat.write(solution(L1), str(path))
    found = similarity.close_copies(path, L1, SOLUTIONS, COURSE)
    assert {hit[0].split()[0] for hit in found} >= {"1.1", "1.2", "1.3"}


def test_names_and_docstrings_do_not_count_but_structure_does():
    a = similarity.normalised("def f(a, b):\n    '''doc'''\n    c = a + b\n    return c * 2\n")
    b = similarity.normalised("def g(x, y):\n    t = x + y\n    return t * 2\n")
    c = similarity.normalised("def f(a, b):\n    c = a - b\n    return c / 2\n")
    assert a == b and similarity.ratio(a, b) == 1.0
    assert similarity.ratio(a, c) < 1.0
