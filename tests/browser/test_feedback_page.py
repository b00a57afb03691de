"""An instructor's feedback page in chromium, offline, 1200 px wide: the "Likely cause" lines wrap
inside the page, the formulas are drawn, the table of contents names the exercises, and the page
asks the network for nothing. Screenshot: screenshots/feedback_1200.png."""

import subprocess
import sys

import nbformat
import pytest

from labsession import ROOT, SHOTS

sys.path.insert(0, str(ROOT / "tests"))
from nbtools import checks_module, course_copy, inject, solution, write_submission  # noqa: E402

pytestmark = pytest.mark.browser
L1 = "01_attention"


@pytest.fixture(scope="module")
def feedback_page(tmp_path_factory):
    from encdec.mistakes import CATALOG
    root = course_copy(tmp_path_factory.mktemp("course"))
    nb = solution(L1)
    for ex in checks_module(L1).EXERCISES[:2]:  # two mistakes: two diagnoses on the page
        nb = inject(nb, ex, CATALOG[ex.name][0].impl)
    write_submission(root / "autograder" / "submitted", "bob", L1, nbformat.from_dict(nb))
    proc = subprocess.run([sys.executable, "-m", "autograder", "autograde"], cwd=root, capture_output=True,
                          text=True, timeout=900)
    page = root / "autograder" / "feedback" / "bob" / L1 / f"{L1}.html"
    assert page.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return page


def test_feedback_reads_offline_at_1200_px(browser, feedback_page):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    asked = []

    def refuse(route):
        asked.append(route.request.url)
        route.abort()
    context.route("http*://**", refuse)
    page = context.new_page()
    page.goto(feedback_page.as_uri())
    page.wait_for_load_state("load")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "feedback_1200.png"), full_page=True)
    assert asked == [], f"the page asked the network for {asked}"
    causes = page.evaluate("""() => {
        const hidden = (el) => {
            const r = el.getBoundingClientRect();
            if (r.right > window.innerWidth + 1) return 'past the right edge';
            for (let a = el; a; a = a.parentElement) {
                if (a.scrollWidth > a.clientWidth + 1 && getComputedStyle(a).overflowX !== 'visible') return 'in a box that scrolls';
            }
            return '';
        };
        // the record's table (.encdec-check) and the checker's printed text (a <pre> of the output)
        return [...document.querySelectorAll('.encdec-check p, div.output_area pre')]
            .filter(el => el.textContent.includes('Likely cause'))
            .map(el => [el.tagName + ': ' + el.textContent.slice(0, 60), hidden(el)]);
    }""")
    assert len(causes) >= 4, causes  # two diagnoses, each in the table and in the printed text
    assert all(problem == "" for _, problem in causes), causes
    drawn = page.evaluate("""() => [...document.querySelectorAll('math')].filter(m => {
        const r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length""")
    assert drawn > 10
    toc = page.locator("#toc").inner_text()
    assert "Exercise 1.1 softmax" in toc and "Test cell" not in toc
    context.close()
