"""The feedback the course writes or shapes, without grading: formulas as MathML (offline), exercises
named in the table of contents, a page for a submission that could not be graded, a page per
student."""

import nbformat
import pytest

from autograder import feedback_exporter, feedback_pages, nbgrader_glue
from autograder.pipeline import Job, Row
from autograder.records import MIME
from nbtools import solution

L1 = "01_attention"
pytestmark = pytest.mark.lesson01


def test_formulas_become_mathml_and_other_dollars_stay():
    html = feedback_exporter.math_to_mathml(r"Scores $QK^\top$, then $$\frac{a}{\sqrt{d_k}}$$ for 5 dollars.")
    assert html.count("<math") == 2 and 'display="block"' in html and "$" not in html.replace("5 dollars", "")
    assert "for 5 dollars." in html
    assert feedback_exporter.math_to_mathml("no math here") == "no math here"


def test_every_formula_of_the_lessons_renders():
    for lesson in ("01_attention", "05_block_ordering", "07_backprop"):
        for c in solution(lesson).cells:
            if c.cell_type == "markdown" and "$" in c.source:
                assert "<code>$" not in feedback_exporter.math_to_mathml(c.source), (lesson, c.source[:200])


def test_the_lessons_diagrams_are_embedded_in_the_page(tmp_path):
    """A feedback page is opened far from course/figures: each diagram travels inside it, and a link
    to a figure that does not exist is left as it was."""
    (tmp_path / "map.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    text = "Map: ![the course map](../figures/map.svg), gone: ![x](../figures/gone.svg)"
    embedded = feedback_exporter.embed_figures(text, tmp_path)
    assert "](data:image/svg+xml;base64," in embedded and "../figures/map.svg" not in embedded
    assert "](../figures/gone.svg)" in embedded
    html, _ = feedback_exporter.FeedbackExporter().from_notebook_node(solution(L1))
    assert "../figures/" not in html and 'src="data:image/svg+xml;base64,' in html


def test_the_table_of_contents_names_come_from_the_records():
    nb = solution(L1)
    test = next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "test_softmax")
    record = {"schema": 1, "exercise": "1.1", "title": "softmax", "points": 3, "score": 3, "parts": []}
    test.outputs = [nbformat.v4.new_output("display_data", data={MIME: record, "text/plain": "ok"})]
    assert feedback_exporter.exercise_names(nb) == {"test_softmax": "Exercise 1.1 softmax"}


@pytest.mark.parametrize("status, words", [
    ("failed: not valid JSON (NotJSONError: …)", "take a fresh copy of the lesson"),
    ("failed: a cell ran past the time limit", "loop that never ends"),
    ("failed: the kernel died while running the notebook", "Python itself stopped"),
    ("tampered: the notebook changes what the tests rely on (np.allclose = …)", "remove the lines named above"),
    ("failed: something new", "Restart Kernel and Run All Cells"),
])
def test_a_submission_that_was_not_graded_gets_a_page_that_says_why_and_what_to_do(tmp_path, status, words):
    page = tmp_path / "feedback" / "bob" / L1 / f"{L1}.html"
    feedback_pages.write_failure_page(page, Job("bob", L1), Row(L1, "bob", status, max_score=10))
    html = page.read_text()
    assert "not graded" in html and "0 / 10 points" in html and words in html
    assert "What went wrong" in html and "http" not in html


def test_one_page_per_student_across_lessons(tmp_path):
    rows = [Row(L1, "ann", "graded", score=7, max_score=10, attempts=2),
            Row("04_cross_attention", "ann", "missing: no submission for this lesson", max_score=8),
            Row(L1, "ben", "failed: not valid JSON", max_score=10, attempts=1)]
    attempts = [{"student": "ann", "assignment": L1, "misconceptions": [("1.1 softmax", "k", "the wrong axis")]}]
    (tmp_path / "ann" / L1).mkdir(parents=True)
    (tmp_path / "ann" / L1 / f"{L1}.html").write_text("page")
    feedback_pages.write_student_pages(rows, attempts, tmp_path)
    ann = (tmp_path / "ann" / "index.html").read_text()
    assert "7 / 18 points over 2 lessons" in ann and f'href="{L1}/{L1}.html"' in ann
    assert "Likely cause: the wrong axis" in ann and "missing: no submission" in ann
    assert "failed: not valid JSON" in (tmp_path / "ben" / "index.html").read_text()


def _lines(html):
    from bs4 import BeautifulSoup
    return [line for line in str(BeautifulSoup(html, features="html.parser")).splitlines() if line.strip()]


@pytest.mark.parametrize("lesson", ["01_attention", "10_capstone"])
def test_the_page_is_nbconverts_without_its_soup_pass(lesson, monkeypatch):
    """The page the course writes equals, element by element, the page nbconvert's HTMLExporter writes with
    its BeautifulSoup pass (which the course leaves out for its time)."""
    nb = solution(lesson)
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            meta["score"], meta["max_score"] = 0.0, float(meta.get("points", 0))
    resources = {"nbgrader": {"notebook": lesson, "score": 0.0, "max_score": 0.0, "late_penalty": 0.0}}
    ours, _ = feedback_exporter.FeedbackExporter(config=nbgrader_glue.feedback_config()).from_notebook_node(nb, dict(resources))
    monkeypatch.setattr(feedback_exporter.FeedbackExporter, "_page",
                        lambda self, nb, resources=None, **kw: feedback_exporter.HTMLExporter.from_notebook_node(
                            self, nb, resources, **kw))
    theirs, _ = feedback_exporter.FeedbackExporter(config=nbgrader_glue.feedback_config()).from_notebook_node(nb, dict(resources))
    assert _lines(ours) == _lines(theirs)


def test_the_accessibility_attributes_are_nbconverts():
    """An image without alt text and lab's focusable cells get what nbconvert's soup pass gives them."""
    from bs4 import BeautifulSoup
    page = ('<div class="jp-Notebook"><div class="jp-Cell-inputWrapper"><img src="a.png"></div>'
            '<div class="jp-RenderedText jp-OutputArea-output" data-mime-type="text/plain">x</div>'
            '<img alt="kept" src="b.png"></div>')
    soup = BeautifulSoup(page, features="html.parser")  # what nbconvert 7.17's HTMLExporter does
    for elem in soup.select("img:not([alt])"):
        elem.attrs["alt"] = "No description has been provided for this image"
    for elem in soup.select(".jp-Notebook div.jp-Cell-inputWrapper, .jp-Notebook div.jp-OutputArea-output"):
        elem.attrs["tabindex"] = "0"
    assert _lines(feedback_exporter.accessible(page)) == _lines(str(soup))
    plain = '<div class="jp-Cell-inputWrapper">no notebook around it</div>'
    assert feedback_exporter.accessible(plain) == plain
