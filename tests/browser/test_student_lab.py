"""`make lab` is a student's JupyterLab: nbgrader's instructor tools are gone, the student's stay,
Jupyter does not ask about its news, nbgrader does not warn about a missing configuration, and a
test cell's score reads "1.5 / 3 points".

Screenshots in screenshots/ (git-ignored); a failure message names the file.
"""

import json
import re
import urllib.parse
import urllib.request

import pytest

from labsession import TOKEN
from test_browser import LESSONS, answer_the_check_before_the_lesson, open_notebook, run_all, shot, wait_until

pytestmark = pytest.mark.browser
INSTRUCTOR_TOOLS = ("Formgrader", "Course List", "Create Assignment", "Create assignment")
NO_CONFIG_WARNING = "No nbgrader_config.py file found"
NEWS_QUESTION = "get notified about official Jupyter news"


def toasts(page):
    """The text of every notification toast on the page."""
    found = page.locator(".Toastify__toast, .jp-Notification-Toast")
    return [found.nth(i).inner_text() for i in range(found.count())]


def menu_items(page, menu):
    """The labels of the visible items of a main-menu menu."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{menu}$")).click()
    items = page.locator(".lm-Menu-content .lm-Menu-item:not(.lm-mod-hidden) .lm-Menu-itemLabel")
    items.first.wait_for(timeout=10_000)
    labels = [items.nth(i).inner_text() for i in range(items.count())]
    page.keyboard.press("Escape")
    return labels


def sidebar_tabs(page):
    """The titles of the tabs of the left and right side bars."""
    tabs = page.locator(".jp-SideBar .lm-TabBar-tab")
    return [(tabs.nth(i).get_attribute("title") or "") + " " + tabs.nth(i).inner_text() for i in range(tabs.count())]


def server(lab, path, data=None):
    """A request to the lab's server, as the page makes it (token in the URL); the JSON answer."""
    url = f"{lab['base']}{path}{'&' if '?' in path else '?'}token={TOKEN}"
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    return json.loads(urllib.request.urlopen(url, data=body, timeout=300).read())


def test_no_instructor_tools_but_validate_and_the_assignment_list(page, lab):
    lesson = LESSONS[0]
    open_notebook(page, lab, f"course/{lesson}/{lesson}.ipynb")
    page.wait_for_timeout(3000)  # the news question, when there is one, comes once the page is restored
    path = shot(page, "student-lab")
    menus = page.locator(".lm-MenuBar-itemLabel")
    names = [menus.nth(i).inner_text() for i in range(menus.count())]
    assert "Nbgrader" in names, f"no Nbgrader menu in {names} (see {path})"
    nbgrader_menu = menu_items(page, "Nbgrader")
    assert "Assignment List" in nbgrader_menu, f"the Nbgrader menu holds {nbgrader_menu} (see {path})"
    everything = nbgrader_menu + sidebar_tabs(page) + [text for name in names if name != "Nbgrader"
                                                       for text in menu_items(page, name)]
    for tool in INSTRUCTOR_TOOLS:
        assert not [text for text in everything if tool in text], f"{tool} is offered: {everything} (see {path})"
    assert page.locator("#nbgrader-create_assignemnt, .nbgrader-mainarea-widget").count() == 0
    assert page.get_by_role("button", name="Validate").count() >= 1, f"no Validate button (see {path})"
    assert not [t for t in toasts(page) if "news" in t.lower()], f"a news pop-up: {toasts(page)} (see {path})"
    assert NEWS_QUESTION not in page.content()

    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="Assignments")
    tab.wait_for(timeout=30_000)
    page.wait_for_timeout(2000)  # the lists load from the server
    path = shot(page, "student-assignment-list")
    assert page.locator(".nbgrader-mainarea-widget").count() == 1, f"the assignment list did not open (see {path})"
    shown = page.locator(".nbgrader-mainarea-widget").inner_text()
    assert "Released assignments" in shown and "exchange directory does not exist" not in shown \
        and "Error" not in shown, f"{shown!r} (see {path})"


def test_the_instructor_servers_are_off_and_nbgrader_finds_its_configuration(page, lab):
    """The formgrader's pages are gone from the server; the Validate button and the assignment list
    load nbgrader's configuration without the 'No nbgrader_config.py file found' warning, in the
    server log or in a toast."""
    assert urllib.request.urlopen(f"{lab['base']}/api/status?token={TOKEN}").status == 200
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(f"{lab['base']}/formgrader?token={TOKEN}")
    assert gone.value.code == 404
    lesson = LESSONS[0]
    validated = server(lab, "/assignments/validate", {"path": f"course/{lesson}/{lesson}.ipynb"})
    assert validated["success"], validated
    listed = server(lab, "/assignments?course_id=")  # a private exchange, empty: no error about it
    assert listed == {"success": True, "value": []}, listed
    assert server(lab, "/courses") == {"success": True, "value": []}
    log = lab["log"].read_text()
    assert "Loading the validate_assignment nbgrader serverextension" in log
    assert "Loading the assignment_list nbgrader serverextension" in log
    for off in ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list"):
        assert off not in log, f"{off} is loaded: {log[:3000]}"
    assert NO_CONFIG_WARNING not in log, log[-3000:]
    open_notebook(page, lab, f"course/{lesson}/{lesson}.ipynb")
    page.get_by_role("button", name="Validate").first.click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=180_000)
    page.wait_for_function("() => !document.querySelector('.jp-Dialog').textContent.includes('Validating')",
                           timeout=180_000)
    path = shot(page, "student-validate-no-warning")
    assert not [t for t in toasts(page) if "nbgrader_config" in t], f"{toasts(page)} (see {path})"
    assert NO_CONFIG_WARNING not in lab["log"].read_text()


WRONG_SOFTMAX = """def softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)
"""


def test_a_test_cells_score_reads_as_points(page, lab):
    """Under the test cell, the result shows '1.5 / 3 points', not a bare 1.5 (the plain number
    stays in the notebook for nbgrader)."""
    lesson = LESSONS[0]
    open_notebook(page, lab, f"student/{lesson}/{lesson}.ipynb")
    answer_the_check_before_the_lesson(page)
    answer = page.locator(".jp-CodeCell", has_text="def softmax(x, axis=-1):").first
    answer.scroll_into_view_if_needed()
    answer.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(WRONG_SOFTMAX)
    page.keyboard.press("Escape")
    run_all(page)
    test_cell = page.locator(".jp-CodeCell", has_text="check_softmax(points=3, hidden=hidden)").first
    test_cell.scroll_into_view_if_needed()
    result = test_cell.locator(".jp-OutputArea-executeResult .jp-OutputArea-output")
    wait_until(page, lambda: result.count() == 1)
    path = shot(page, "score-as-points")
    shown = result.inner_text().strip()
    assert shown == "1.5 / 3 points", f"the result shows {shown!r} (see {path})"
    assert result.get_attribute("data-mime-type") == "text/html", f"not the HTML form (see {path})"
