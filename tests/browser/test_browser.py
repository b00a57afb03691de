"""The course in a real browser: what a student sees in JupyterLab works.

Screenshots of every step land in screenshots/ (git-ignored); a failure message names the file.
"""

import re
import time

import pytest

from labsession import SHOTS, TOKEN

pytestmark = pytest.mark.browser
LESSONS = sorted(p.name for p in (SHOTS.parent / "course").iterdir() if p.is_dir() and re.match(r"\d\d_", p.name))
RUN_ALL = [lesson for lesson in LESSONS if lesson[:2] in ("01", "05")]


def shot(page, name):
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def open_notebook(page, lab, path):
    page.goto(f"{lab['base']}/lab/tree/{path}?reset&token={TOKEN}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    dismiss_news(page)


def dismiss_news(page):
    no = page.locator(".jp-Notification-Toast-Close, .Toastify__toast button:has-text('No')")
    for i in range(no.count()):
        try:
            no.nth(i).click(timeout=1000)
        except Exception:
            pass


def run_all(page):
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_text("Run All Cells", exact=True).click()
    page.wait_for_timeout(1500)
    page.wait_for_function(
        "() => ![...document.querySelectorAll('.jp-InputPrompt')].some(e => e.textContent.includes('*'))",
        timeout=180_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)


def answer_the_check_before_the_lesson(page):
    """A lesson opens with its concept check (Exercise N.0, 0 points). Its released cell raises until it
    holds answers, as every answer given as data does, so Run All stops there: a student answers it
    first. Here every question is answered "a"."""
    cell = page.locator(".jp-CodeCell", has_text="concepts_before = {1: ...").first
    cell.scroll_into_view_if_needed()
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text("concepts_before = {" + ", ".join(f'{n}: "a"' for n in range(1, 7)) + "}")
    page.keyboard.press("Escape")


def wait_until(page, condition, timeout=30):
    """Poll a condition on the page (widgets re-render their elements, so handles go stale)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if condition():
                return True
        except Exception:
            pass
        page.wait_for_timeout(250)
    return False


def no_error_dialogs(page, where):
    dialogs = page.locator(".jp-Dialog")
    assert dialogs.count() == 0, f"{where}: an error dialog is open: {dialogs.first.inner_text()[:300]}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_renders_for_a_student(page, lab, lesson):
    open_notebook(page, lab, f"course/{lesson}/{lesson}.ipynb")
    path = shot(page, f"render-{lesson}")
    title = page.locator(".jp-MarkdownCell h1").first.inner_text()
    assert re.match(rf"Lesson {int(lesson[:2])}\b", title), f"{lesson}: title is {title!r} (see {path})"
    stubs = page.locator(".jp-CodeCell .jp-InputArea-editor", has_text="raise NotImplementedError()")
    assert stubs.count() >= 3, f"{lesson}: only {stubs.count()} exercise stubs visible (see {path})"
    the_diagrams_are_drawn(page, lesson, path)
    a_self_check_opens_on_click(page, lesson)
    no_error_dialogs(page, lesson)
    assert not page.console_errors, f"{lesson}: browser console errors {page.console_errors[:5]} (see {path})"


def the_diagrams_are_drawn(page, lesson, path):
    """The course map first, then every figure of the lesson: loaded (not a broken image), with alt text."""
    figures = page.locator(".jp-MarkdownCell img[src*='figures/']")
    assert figures.count() >= 1, f"{lesson}: no diagram in the page (see {path})"
    first = figures.first
    assert "course_map_" in (first.get_attribute("src") or ""), f"{lesson}: the course map does not open the lesson"
    for i in range(figures.count()):
        img = figures.nth(i)
        img.scroll_into_view_if_needed()
        wait_until(page, lambda: img.evaluate("e => e.complete && e.naturalWidth > 0"), timeout=15)
        assert img.evaluate("e => e.naturalWidth > 300"), f"{lesson}: {img.get_attribute('src')} did not load"
        assert len((img.get_attribute("alt") or "").split()) >= 8, f"{lesson}: {img.get_attribute('src')} has no alt text"


def a_self_check_opens_on_click(page, lesson):
    """The answers are folded in <details>: hidden until the student asks for them."""
    details = page.locator(".jp-MarkdownCell details")
    assert details.count() >= 3, f"{lesson}: {details.count()} self-check answers found"
    first = details.first
    first.scroll_into_view_if_needed()
    assert first.evaluate("e => !e.open"), f"{lesson}: a self-check answer is shown before it is asked for"
    first.locator("summary").click()
    assert wait_until(page, lambda: first.evaluate("e => e.open")), f"{lesson}: the answer does not open"
    shot(page, f"self-check-{lesson}")
    assert len(first.inner_text().split()) > 12, f"{lesson}: the opened answer is empty"


@pytest.mark.parametrize("lesson", RUN_ALL)
def test_run_all_renders_figures_and_live_widgets(page, lab, lesson):
    open_notebook(page, lab, f"solutions/{lesson}/{lesson}.ipynb")
    run_all(page)
    path = shot(page, f"run-all-{lesson}")
    assert page.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.error']").count() == 0, \
        f"{lesson}: a cell raised an error (see {path})"
    images = page.locator(".jp-OutputArea-output img")
    wait_until(page, lambda: images.count() >= 2)  # a loaded machine renders them later
    path = shot(page, f"run-all-{lesson}")
    assert images.count() >= 2, f"{lesson}: {images.count()} figures rendered (see {path})"
    assert page.locator(".widget-dropdown select").count() >= 5, f"{lesson}: the ordering widget is missing (see {path})"
    if lesson.startswith("01"):
        move_the_dk_slider(page, lesson)
    answer_the_ordering_widget(page, lesson)
    no_error_dialogs(page, lesson)
    assert not page.console_errors, f"{lesson}: browser console errors {page.console_errors[:5]}"


def move_the_dk_slider(page, lesson):
    handle = page.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    widget_area = page.locator(".jp-OutputArea-output", has=page.locator(".noUi-handle")).first
    figure = widget_area.locator("img").first
    before = figure.get_attribute("src")
    label = widget_area.locator(".widget-readout").first.inner_text()
    shot(page, f"slider-before-{lesson}")
    handle.focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    # interact() replaces the figure element: re-read it until it differs
    wait_until(page, lambda: widget_area.locator("img").first.get_attribute("src") != before)
    path = shot(page, f"slider-after-{lesson}")
    assert widget_area.locator("img").first.get_attribute("src") != before, f"the figure did not change (see {path})"
    assert widget_area.locator(".widget-readout").first.inner_text() != label, f"the d_k readout did not move (see {path})"


def answer_the_ordering_widget(page, lesson):
    import importlib  # the orderings' answers come from the checkers
    module = importlib.import_module(f"encdec.checks.lesson{lesson[:2]}")
    ordering = module.ORDERINGS[0]
    boxes = page.locator(".widget-dropdown select")
    widget = page.locator(".widget-vbox", has=page.locator(".widget-dropdown select")).last
    selects = widget.locator(".widget-dropdown select")
    n = len(ordering.steps)
    right = ordering.answer
    wrong = right[1:] + right[:1]
    selects.first.scroll_into_view_if_needed()
    for pos, number in enumerate(wrong):
        selects.nth(pos).select_option(value=None, label=f"{number}. {ordering.text(number)}")
    feedback = widget.locator(".ordering-feedback")
    feedback.wait_for(timeout=10_000)
    path = shot(page, f"ordering-wrong-{lesson}")
    assert feedback.inner_text().startswith("✗"), f"wrong order not flagged: {feedback.inner_text()!r} (see {path})"
    assert "comes too early" in feedback.inner_text()
    for pos, number in enumerate(right):
        selects.nth(pos).select_option(label=f"{number}. {ordering.text(number)}")
    wait_until(page, lambda: feedback.inner_text().startswith("✓"))
    path = shot(page, f"ordering-right-{lesson}")
    assert feedback.inner_text().startswith("✓"), f"right order not accepted: {feedback.inner_text()!r} (see {path})"
    assert boxes.count() >= n


WRONG_SOFTMAX = """def softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)
"""


def test_a_wrong_answer_shows_the_misconception(page, lab):
    lesson = LESSONS[0]
    open_notebook(page, lab, f"student/{lesson}/{lesson}.ipynb")
    answer_the_check_before_the_lesson(page)
    answer = page.locator(".jp-CodeCell", has_text="def softmax(x, axis=-1):").first
    answer.scroll_into_view_if_needed()
    editor = answer.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(WRONG_SOFTMAX)
    page.keyboard.press("Escape")
    run_all(page)
    test_cell = page.locator(".jp-CodeCell", has_text="check_softmax(points=3, hidden=hidden)").first
    test_cell.scroll_into_view_if_needed()
    path = shot(page, "wrong-answer-diagnosis")
    output = test_cell.locator(".jp-OutputArea").inner_text()
    assert "Likely cause: exp(x) overflows for large logits" in output, f"no diagnosis in {output[:500]!r} (see {path})"
    assert "1.5 / 3 points" in output


def test_nbgrader_validate_button_validates_the_open_notebook(page, lab):
    lesson = LESSONS[0]
    open_notebook(page, lab, f"course/{lesson}/{lesson}.ipynb")
    page.get_by_role("button", name="Validate").first.click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=180_000)
    page.wait_for_function("() => !document.querySelector('.jp-Dialog').textContent.includes('Validating')",
                           timeout=180_000)
    path = shot(page, "nbgrader-validate")
    text = dialog.inner_text()
    assert re.search(r"validation failed|failed", text, re.I), f"validate dialog says {text[:400]!r} (see {path})"
