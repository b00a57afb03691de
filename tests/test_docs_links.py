"""The README and docs/ stay navigable: every relative link and image in README.md, AUTHORING.md and
docs/**/*.md leads to a file or folder that exists, and every #anchor to a heading of its target
(GitHub's anchors). The README stays short and sends each kind of user to their page."""

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = ["index", "students", "self-learners", "instructors", "class", "large-classes", "security",
         "library", "capstone"]
README_MAX_WORDS = 1300

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^\s)>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?")
HTML_LINK = re.compile(r"<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.IGNORECASE)
HTML_ID = re.compile(r"<[a-z]+\b[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
ATX_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def markdown_files():
    return [ROOT / "README.md", ROOT / "AUTHORING.md", *sorted(DOCS.rglob("*.md"))]


def prose_lines(text):
    """The lines outside fenced code blocks, with their line numbers."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        if match:
            fence = match.group(1)
            continue
        yield number, line


def anchor(heading):
    """GitHub's anchor for a heading: its text as rendered, lowercased, punctuation other than
    hyphens and underscores dropped, each space a hyphen."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor a Markdown file offers: its headings (repeats numbered -1, -2, … as GitHub does)
    and the ids and names of its HTML elements."""
    found, seen = set(), {}
    previous = ""
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        heading = None
        match = ATX_HEADING.match(line)
        if match:
            heading = match.group(2)
        elif previous.strip() and not previous.lstrip().startswith("|") and re.fullmatch(r"\s{0,3}(=+|-+)\s*", line):
            heading = previous.strip()  # a setext heading
        if heading is not None:
            slug = anchor(heading)
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
        found.update(HTML_ID.findall(line))
        previous = line
    return found


def links(path):
    """(line number, target) of every link, image and HTML href/src outside code."""
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        line = CODE_SPAN.sub(lambda m: "code", line)
        for pattern in (INLINE_LINK, REFERENCE_DEFINITION, HTML_LINK):
            for target in pattern.findall(line):
                yield number, target


def broken(path):
    """What is wrong with the relative links of one Markdown file, one line each."""
    problems = []
    for number, target in links(path):
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{number}: {target}"
        if not target:
            problems.append(f"{where}: an empty link")
            continue
        if SCHEME.match(target) or target.startswith("//"):
            continue  # http(s), mailto and the like are not checked here
        file_part, _, fragment = target.partition("#")
        destination = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not destination.exists():
            problems.append(f"{where}: no such file or folder")
            continue
        if not fragment:
            continue
        if destination.is_dir():
            destination = destination / "README.md"
        if destination.suffix.lower() != ".md" or not destination.exists():
            problems.append(f"{where}: an anchor into something that is not a Markdown page")
        elif unquote(fragment).lower() not in {a.lower() for a in anchors(destination)}:
            problems.append(f"{where}: no heading with the anchor #{fragment} in {destination.name}")
    return problems


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(path):
    assert broken(path) == []


def test_the_docs_pages_exist():
    missing = [page for page in PAGES if not (DOCS / f"{page}.md").is_file()]
    assert missing == []


def test_the_readme_is_short():
    words = len((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert words <= README_MAX_WORDS, f"README.md has {words} words; at most {README_MAX_WORDS}"


def test_the_readme_links_to_every_page():
    readme = ROOT / "README.md"
    reached = {(readme.parent / unquote(target.partition("#")[0])).resolve()
               for _, target in links(readme) if target and not SCHEME.match(target)}
    unlinked = [page for page in PAGES if (DOCS / f"{page}.md").resolve() not in reached]
    assert unlinked == [], f"README.md does not link to docs/{{{','.join(unlinked)}}}.md"


def test_github_anchors():
    assert anchor("Grades out to the LMS: `make export`") == "grades-out-to-the-lms-make-export"
    assert anchor("Judge, don't penalise, close copies") == "judge-dont-penalise-close-copies"
    assert anchor("Encoder–Decoder Transformers, from NumPy to GPU") == "encoderdecoder-transformers-from-numpy-to-gpu"
    assert anchor("The reference library [`encdec`](library.md)") == "the-reference-library-encdec"
    assert anchor("SANDBOX_MEMORY and  two spaces") == "sandbox_memory-and--two-spaces"


def test_a_broken_link_or_anchor_is_found(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## A section\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "[fine](other.md#a-section) [fine too](#page) ![fine](other.md) <a href=\"other.md\">ok</a>\n"
        "[gone](missing.md) [wrong anchor](other.md#no-such-section) [here](#nowhere)\n"
        "<img src=\"missing.png\"> [web](https://example.org/missing) `[code](missing-too.md)`\n"
        "```\n[in a fence](missing-three.md)\n```\n")
    problems = broken(page)
    assert len(problems) == 4, problems
    assert sum("no such file" in p for p in problems) == 2
    assert sum("no heading with the anchor" in p for p in problems) == 2
