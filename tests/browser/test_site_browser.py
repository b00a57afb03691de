"""The static website of `make site` in chromium, with the internet refused: every page loads, its
figures show, its formulas are typeset by the bundled MathJax, a self-check answer opens on click,
no link inside the site is broken, and the search finds what it should.

(Named test_site_browser.py: tests/test_site.py holds the site's fast checks, and two test modules
of one name cannot be collected in one run.) The site is built into a temporary folder by
tools/site/build.py, the entry point of `make site`, and served by Python's http.server.
Screenshots land in screenshots/site-*.png.
"""

import functools
import http.server
import threading
import urllib.parse
from pathlib import Path

import pytest

from labsession import ROOT, SHOTS

pytestmark = pytest.mark.browser
LESSONS = sorted(p.name for p in (ROOT / "course").iterdir() if p.is_dir() and p.name[:2].isdigit())


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    import sys
    sys.path.insert(0, str(ROOT / "tests"))
    from test_site import build_site
    out = build_site(tmp_path_factory.mktemp("site") / "site")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"dir": out, "base": f"http://127.0.0.1:{server.server_port}"}
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def context(browser, site):
    """A browser context that may reach only the local server: every other request is aborted."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 950})
    ctx.refused = []
    origin = urllib.parse.urlsplit(site["base"]).netloc

    def route(r):
        if urllib.parse.urlsplit(r.request.url).netloc == origin:
            r.continue_()
        else:
            ctx.refused.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    yield ctx
    ctx.close()


def open_page(context):
    pg = context.new_page()
    pg.problems = []
    pg.on("console", lambda m: pg.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.problems.append(f"page error: {e}"))
    # A request cancelled by the next navigation (the favicon, fetched after `load`) is no failure; a
    # missing file answers 404 (below), and a request to another host is refused (context.refused).
    pg.on("requestfailed", lambda r: pg.problems.append(f"failed: {r.url} ({r.failure})")
          if "ERR_ABORTED" not in (r.failure or "") else None)
    pg.on("response", lambda r: pg.problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    return pg


def wait_for_mathjax(pg):
    """MathJax has typeset the page (or the page has no MathJax)."""
    pg.wait_for_function("() => !window.MathJax || (window.MathJax.startup && window.MathJax.startup.promise)")
    pg.evaluate("() => window.MathJax ? window.MathJax.startup.promise.then(() => true) : true")


def shot(pg, name):
    SHOTS.mkdir(exist_ok=True)
    path = SHOTS / f"site-{name}.png"
    pg.screenshot(path=str(path))
    return path


@pytest.fixture(scope="module")
def visited(context, site):
    """Every page of the site, loaded once: its status, its problems, its images, its links and ids."""
    site_pages = sorted(p.relative_to(site["dir"]).as_posix() for p in site["dir"].rglob("*.html")
                        if "_static" not in p.parts)
    pg, seen = open_page(context), {}
    for rel in site_pages:
        pg.problems.clear()
        response = pg.goto(f"{site['base']}/{rel}", wait_until="load")
        wait_for_mathjax(pg)
        pg.wait_for_function("() => [...document.images].every(i => i.complete)")
        seen[rel] = {
            "status": response.status,
            "problems": list(pg.problems),
            "broken_images": pg.evaluate(
                "() => [...document.images].filter(i => !(i.naturalWidth > 0)).map(i => i.getAttribute('src'))"),
            "images": pg.evaluate("() => document.images.length"),
            "links": pg.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)"),
            "ids": set(pg.evaluate("() => [...document.querySelectorAll('[id], a[name]')].map(e => e.id || e.name)")),
        }
    pg.close()
    return seen


def test_every_page_loads_without_errors(visited, context):
    assert len(visited) >= len(LESSONS) + 5
    bad = {rel: v["problems"] for rel, v in visited.items() if v["status"] != 200 or v["problems"]}
    assert not bad, bad
    assert context.refused == [], f"pages asked the internet for: {sorted(set(context.refused))}"


def test_every_lesson_page_is_there(visited):
    for name in LESSONS:
        assert f"course/{name}/{name}.html" in visited, name
    assert "index.html" in visited and "search.html" in visited


def test_every_figure_shows(visited):
    assert {rel: v["broken_images"] for rel, v in visited.items() if v["broken_images"]} == {}
    for name in LESSONS:  # each lesson opens with the course map at least
        assert visited[f"course/{name}/{name}.html"]["images"] >= 1, name


def test_no_link_inside_the_site_is_broken(visited, site):
    broken = []
    for rel, v in visited.items():
        for href in v["links"]:
            if not href.startswith(site["base"] + "/"):
                continue  # a link out of the site (https://…) is followed by the reader, not fetched
            url = urllib.parse.urlsplit(href)
            target = urllib.parse.unquote(url.path)[1:] or "index.html"
            if target.endswith("/"):
                target += "index.html"
            if target not in visited:
                if not (site["dir"] / target).is_file():
                    broken.append(f"{rel}: {href} (no such page)")
            elif url.fragment and urllib.parse.unquote(url.fragment) not in visited[target]["ids"]:
                broken.append(f"{rel}: {href} (no #{url.fragment} there)")
    assert broken == []


def test_math_is_typeset_with_the_internet_refused(context, site):
    pg = open_page(context)
    pg.goto(f"{site['base']}/course/01_attention/01_attention.html")
    wait_for_mathjax(pg)
    math = pg.evaluate("""() => {
        const all = [...document.querySelectorAll('.bd-article .math')];
        const text = el => { const c = el.cloneNode(true);
            c.querySelectorAll('pre, code, mjx-container, script, style').forEach(e => e.remove());
            return c.textContent; };
        return {
            formulas: all.length,
            typeset: all.filter(e => e.querySelector('mjx-container')).length,
            containers: document.querySelectorAll('.bd-article mjx-container').length,
            text: text(document.querySelector('.bd-article')),
            fonts: [...document.fonts].filter(f => f.family.includes('MJX') && f.status === 'loaded').length,
        };
    }""")
    assert math["formulas"] > 50 and math["typeset"] == math["formulas"], math
    assert math["containers"] >= math["formulas"]
    for raw in ("\\(", "\\)", "\\[", "$$"):
        assert raw not in math["text"], f"{raw} left untypeset"
    import re
    assert not re.search(r"\$[^$\s][^$]*\\[a-z]+[^$]*\$", math["text"]), "a $…$ formula left as text"
    assert math["fonts"] > 0, "MathJax's fonts did not load"
    # the formula at the top of §1.1, as a reader sees it
    pg.locator("#what-attention-computes").scroll_into_view_if_needed()
    shot(pg, "lesson01-formula")
    assert pg.problems == [] and context.refused == []
    pg.close()


def test_a_self_check_answer_opens_on_click(context, site):
    pg = open_page(context)
    pg.goto(f"{site['base']}/course/01_attention/01_attention.html")
    wait_for_mathjax(pg)
    answer = pg.locator("details").first
    body = answer.locator("p").first
    assert not body.is_visible(), "the answer is shown before it is asked for"
    answer.locator("summary").click()
    body.wait_for(state="visible", timeout=5000)
    assert answer.evaluate("d => d.open")
    assert answer.locator("mjx-container").count() > 0  # its formulas are typeset too
    answer.scroll_into_view_if_needed()
    shot(pg, "lesson01-answer")
    answer.locator("summary").click()
    body.wait_for(state="hidden", timeout=5000)
    pg.close()


def test_search_works_offline(context, site):
    pg = open_page(context)
    pg.goto(f"{site['base']}/search.html?q=softmax")
    pg.wait_for_selector("#search-results ul.search li", timeout=30_000)
    pg.wait_for_function("() => document.querySelector('#search-results p.search-summary')"
                         " && /found/.test(document.querySelector('#search-results p.search-summary').textContent)",
                         timeout=30_000)
    found = pg.evaluate("() => [...document.querySelectorAll('#search-results ul.search li a')].map(a => a.href)")
    assert any("01_attention" in href for href in found), found
    shot(pg, "search")
    assert pg.problems == [] and context.refused == []
    pg.close()


def test_screenshots_of_the_landing_page_and_lesson_1(context, site):
    pg = open_page(context)
    pg.goto(f"{site['base']}/index.html")
    assert "Lesson 1" in pg.inner_text(".bd-sidebar-primary")
    shot(pg, "index")
    pg.goto(f"{site['base']}/course/01_attention/01_attention.html")
    wait_for_mathjax(pg)
    assert pg.locator(".admonition:has-text('Run this lesson')").is_visible()
    shot(pg, "lesson01-top")
    # the course map and the formulas of §1.1 in one view, in a taller window (docs/site-lesson01.png)
    pg.set_viewport_size({"width": 1400, "height": 1500})
    pg.evaluate("""() => { const map = document.querySelector('.bd-article img');
        window.scrollTo(0, map.getBoundingClientRect().bottom + window.scrollY - 420); }""")
    pg.wait_for_timeout(300)
    shot(pg, "lesson01")
    pg.close()
