"""The static website of `make site`: built from course/ and docs/, every page there, no solution or
hidden test on any page, nothing fetched from the internet. (tests/browser/test_site_browser.py
opens it in chromium.)

The site is built once for this module, into a temporary folder, by the same entry point as
`make site` (tools/site/build.py), about ten seconds.
"""

import html
import importlib.util
import json
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from nbtools import ROOT

BUILD = ROOT / "tools" / "site" / "build.py"
LESSONS = sorted(p.name for p in (ROOT / "course").iterdir() if p.is_dir() and re.match(r"\d\d_", p.name))
MIN_LINE = 25  # shorter lines (`hidden = True`, `return out`) are not distinctive enough to look for


def build_site(out):
    """Build the site into out (its sources staged beside it); fail with Sphinx's warnings."""
    run = subprocess.run([sys.executable, str(BUILD), "--out", str(out), "--src", str(out.with_name("site-src"))],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"the site did not build:\n{run.stdout}\n{run.stderr}"
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build_site(tmp_path_factory.mktemp("site") / "site")


def pages(site):
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def page_text(path):
    """A page's text as a reader sees it: no tags, entities decoded, runs of whitespace as one space."""
    raw = path.read_text(encoding="utf-8")
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S | re.I)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", raw)).split())


# --- what the site must not show ---------------------------------------------------------------

def marked_lines(notebook_text, begin, end):
    """The lines of every cell between `### BEGIN x` and `### END x`, stripped."""
    lines, inside = [], False
    for line in notebook_text.splitlines():
        if line.strip() == begin:
            inside = True
        elif line.strip() == end:
            inside = False
        elif inside:
            lines.append(line.strip())
    return lines


def released_text():
    """Everything the released lessons say, whitespace collapsed: a line quoted there (a hint, a
    formula in code) is no secret. The generated "Common pitfalls" (tools/pitfalls.py) do not count:
    a solution line they showed would otherwise make itself no secret."""
    text = []
    for path in sorted((ROOT / "course").glob("*/*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if "pitfalls" not in cell.get("metadata", {}).get("tags", []):
                text.append(" ".join("".join(cell["source"]).split()))
    return "\n".join(text)


def secret_lines():
    """Every distinctive line of a solution or a hidden test in solutions/: {line: where}."""
    released, secrets = released_text(), {}
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            for kind in ("SOLUTION", "HIDDEN TESTS"):
                for line in marked_lines(source, f"### BEGIN {kind}", f"### END {kind}"):
                    line = " ".join(line.split())
                    if len(line) >= MIN_LINE and line not in released:
                        secrets.setdefault(line, f"{path.parent.name} ({kind.lower()})")
    return secrets


def leaks(text, secrets):
    return [(line, where) for line, where in secrets.items() if line in text]


def test_the_secret_lines_are_found_in_solutions():
    secrets = secret_lines()
    # every lesson has solutions; a change of the markers must not leave this test checking nothing
    assert len({where.split()[0] for where in secrets.values()}) == len(LESSONS), sorted(set(secrets.values()))
    assert len(secrets) > 100


def test_a_solution_line_on_a_page_is_found(tmp_path):
    """The check itself: a solution line, highlighted and escaped as Sphinx writes code, is caught."""
    secrets = secret_lines()
    line = next(line for line in secrets if "<" in line or ">" in line or "&" in line or "'" in line)
    words = re.split(r"(\s+)", line)
    highlighted = "".join(f'<span class="n">{html.escape(w)}</span>' if w.strip() else w for w in words)
    page = tmp_path / "page.html"
    page.write_text(f"<html><body><pre>    {highlighted}\n</pre></body></html>")
    assert leaks(page_text(page), secrets) == [(line, secrets[line])]


def test_no_page_shows_a_solution_or_a_hidden_test(site):
    secrets = secret_lines()
    found = {}
    for path in pages(site):
        for line, where in leaks(page_text(path), secrets):
            found.setdefault(str(path.relative_to(site)), []).append(f"{where}: {line}")
    assert not found, f"solution or hidden-test lines on the site: {found}"


def test_lesson_pages_have_no_markers_of_solutions_or_hidden_tests(site):
    """The hidden tests' own lines are short (`hidden = True`): look for them, and the markers, by name."""
    for name in LESSONS:
        text = page_text(site / "course" / name / f"{name}.html")
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "hidden = True"):
            assert marker not in text, f"{name}: {marker}"
        assert "hidden = False" in text, name  # the visible test cells are there


def test_no_notebook_or_source_is_copied_into_the_site(site):
    copied = [p.relative_to(site).as_posix() for p in site.rglob("*") if p.suffix in (".ipynb", ".md", ".py")]
    assert copied == [], copied


# --- every page there ------------------------------------------------------------------------------

def test_every_lesson_has_a_page_saying_how_to_run_it(site):
    for name in LESSONS:
        page = site / "course" / name / f"{name}.html"
        assert page.exists(), f"no page for {name}"
        text = page_text(page)
        assert "Run this lesson" in text and "make lab" in text, name
        assert f"{name}/{name}.ipynb" in text and f"make grade LESSON={name[:2]}" in text, name
        # the lesson itself: its title, its exercise stubs and its visible tests
        title = json.loads((ROOT / "course" / name / f"{name}.ipynb").read_text())["cells"][0]["source"][0]
        assert title.lstrip("# ").strip() in text
        assert "raise NotImplementedError()" in text and "from encdec.checks" in text, name


def test_every_appendix_and_doc_page_is_there(site):
    sources = sorted((ROOT / "course").glob("*.md")) + sorted((ROOT / "docs").rglob("*.md"))
    sources += [ROOT / "README.md"]
    for source in sources:
        page = site / source.relative_to(ROOT).with_suffix(".html")
        assert page.exists(), f"no page for {source.relative_to(ROOT)}"
        heading = next(line[2:] for line in source.read_text().splitlines() if line.startswith("# "))
        plain = " ".join(re.sub(r"[`*]|\[([^]]*)\]\([^)]*\)", r"\1", heading).split())
        assert plain in page_text(page), f"{page.relative_to(site)} does not show {plain!r}"


def test_the_landing_page_links_every_lesson_and_doc(site):
    index = (site / "index.html").read_text()
    assert "Encoder–Decoder Transformers, from NumPy to GPU" in page_text(site / "index.html")
    for name in LESSONS:
        assert f'href="course/{name}/{name}.html"' in index, name
    for source in sorted((ROOT / "docs").rglob("*.md")):
        assert f'href="{source.relative_to(ROOT).with_suffix(".html").as_posix()}"' in index, source
    assert (site / "search.html").exists() and (site / "searchindex.js").exists()


def test_figures_are_in_the_site(site):
    shown = set()
    for name in LESSONS:
        page = (site / "course" / name / f"{name}.html").read_text()
        for src in re.findall(r'<img [^>]*src="([^"]+)"', page):
            assert (site / "course" / name / src).resolve().is_file(), f"{name}: {src} is missing"
            shown.add(src.rsplit("/", 1)[-1])
    assert {p.name for p in (ROOT / "course" / "figures").glob("course_map_*.svg")} <= shown


def test_formulas_are_written_for_mathjax_and_mathjax_is_in_the_site(site):
    page = (site / "course" / "01_attention" / "01_attention.html").read_text()
    assert r'<span class="math notranslate nohighlight">\(' in page
    script = re.search(r'<script[^>]+src="([^"]*mathjax[^"]*\.js)[^"]*"', page)
    assert script, "no MathJax script on the lesson's page"
    path = (site / "course" / "01_attention" / script.group(1).split("?")[0]).resolve()
    assert path.is_file() and path.is_relative_to(site.resolve())
    assert list((path.parent / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff")), "MathJax's fonts"


def test_self_check_answers_stay_folded(site):
    page = (site / "course" / "01_attention" / "01_attention.html").read_text()
    answers = re.findall(r"<details><summary>Answer</summary>(.*?)</details>", page, re.S)
    assert len(answers) >= 5
    assert all("<p>" in a for a in answers)  # the Markdown inside is rendered, not shown raw
    assert any('class="math' in a for a in answers)


# --- nothing fetched from the internet ------------------------------------------------------------

REMOTE = re.compile(r"^\s*(?:https?:)?//", re.I)
CSS_URL = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])\s*((?:https?:)?//[^'")\s]+)""", re.I)


class Fetched(HTMLParser):
    """The URLs a browser fetches by itself when it shows the page."""

    ATTRS = {"script": ["src"], "link": ["href"], "img": ["src", "srcset"], "iframe": ["src"], "source": ["src"],
             "video": ["src", "poster"], "audio": ["src"], "embed": ["src"], "object": ["data"], "input": ["src"]}

    def __init__(self):
        super().__init__()
        self.urls, self._style = [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in self.ATTRS.get(tag, []):
            if tag == "link" and attrs.get("rel") in ("canonical",):
                continue
            if attrs.get(name):
                self.urls.append(f"<{tag} {name}> {attrs[name]}")
        if attrs.get("style"):
            self.urls += [f"style attribute: {u}" for u in CSS_URL.findall(attrs["style"])]
        self._style = tag == "style"

    def handle_endtag(self, tag):
        self._style = False

    def handle_data(self, data):
        if self._style:
            self.urls += [f"<style>: {u}" for u in CSS_URL.findall(data)]


def remote_fetches(site):
    found = []
    for path in pages(site):
        parser = Fetched()
        parser.feed(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(site)}: {u}" for u in parser.urls if REMOTE.match(u.split("> ", 1)[-1])]
    for path in site.rglob("*.css"):
        found += [f"{path.relative_to(site)}: {u}" for u in CSS_URL.findall(path.read_text(encoding="utf-8"))]
    return found


def test_no_page_fetches_anything_from_the_internet(site):
    assert remote_fetches(site) == []


def test_the_fetch_check_sees_a_cdn(tmp_path):
    (tmp_path / "a.html").write_text('<html><head><script src="https://cdn.example.org/x.js"></script>'
                                     '<link rel="stylesheet" href="//fonts.example.com/css"></head>'
                                     '<body><a href="https://example.org">a link is not fetched</a></body></html>')
    (tmp_path / "b.css").write_text("@import 'https://fonts.example.com/css2';\n"
                                    "h1 { background: url(data:image/svg+xml;utf8,<svg xmlns='http://www.w3.org/2000/svg'/>) }")
    assert len(remote_fetches(tmp_path)) == 3


# --- links between the staged pages ----------------------------------------------------------------

def test_links_to_staged_pages_stay_and_links_to_repository_files_become_text():
    spec = importlib.util.spec_from_file_location("site_build", BUILD)  # not `build`: a PyPI package's name
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rewrite_links = module.rewrite_links
    staged = {"README.md", "docs/students.md", "docs/class.md", "docs/lesson01-diagnosis.png",
              "course/FIGURE_KEY.md", "course/01_attention/01_attention.ipynb"}
    page = "\n".join([
        "[README](../README.md) · [the class](class.md#the-students-side) · [web](https://example.org/x.py)",
        "![a wrong softmax](lesson01-diagnosis.png) and [the config](../autograder/nbgrader_config.py)",
        "[`docs/gpu-run/`](gpu-run/) · [`tools/lab/`](../tools/lab/) · [Lesson 1](../course/01_attention/)",
        "`[not a link](../nowhere.py)` and [top](#set-up)",
        "```", "[in a code block](../nowhere.py)", "```",
    ])
    out = rewrite_links(page, "docs/students.md", staged).splitlines()
    assert out[0] == page.splitlines()[0]
    assert out[1] == ("![a wrong softmax](lesson01-diagnosis.png) and the config (`autograder/nbgrader_config.py`)")
    assert out[2] == "`docs/gpu-run` · `tools/lab` · [Lesson 1](../course/01_attention/01_attention.ipynb)"
    assert out[3:] == page.splitlines()[3:]
