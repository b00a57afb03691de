"""Build the course's static website: `make site`, or `python tools/site/build.py --out DIR`.

Stages the sources into a scratch folder laid out like the repository, so that the lessons'
relative links (../figures/x.svg, ../FIGURE_KEY.md) resolve as they do in JupyterLab, then runs
Sphinx (tools/site/conf.py) on it. What is staged:

  course/NN_slug/NN_slug.ipynb   the released lessons, a "Run this lesson" note added after the title
  course/*.md, course/figures/   the appendices, the figure key, the diagrams
  docs/**/*.md and their images  the user documentation, whatever pages exist at build time
  README.md                      the project's front page
  index.md                       the landing page (tools/site/index.md, its tables of contents filled in)

Nothing is read from solutions/, nor AUTHORING.md (the authors' guide, whose worked example of an
answer cell is an answer). A Markdown link to a page or image that is staged stays a link;
a link to anything else in the repository (a script, a config file, a page not written yet)
becomes its text followed by the path as code, so the site has no broken links.
"""

import argparse
import json
import os
import posixpath
import re
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
IMAGES = {".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp"}
LESSON = re.compile(r"^(\d\d)_[a-z0-9_]+$")
MARKER = ".site-src"  # marks a staging folder, which the next build may empty

RUN_NOTE = """:::{{admonition}} Run this lesson
:class: tip
This page shows the lesson as it is handed out, without outputs. To work through it, run `make lab`
in the course's folder, then open `{slug}/{slug}.ipynb`; `make grade LESSON={num}` grades it.
:::
"""


def lessons(root=ROOT):
    return sorted(p.name for p in (root / "course").iterdir() if p.is_dir() and LESSON.match(p.name))


def doc_pages(root=ROOT):
    """docs/**/*.md, relative to the repository root, docs/index.md first if there is one."""
    pages = sorted(p.relative_to(root).as_posix() for p in (root / "docs").rglob("*.md"))
    return sorted(pages, key=lambda p: (p != "docs/index.md", p.count("/"), p))


def title_of(path):
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return Path(path).stem


# --- links ------------------------------------------------------------------------------------

FENCE = re.compile(r"^\s*(```+|~~~+)")
# [text](target "title") and ![alt](target); text may hold one level of brackets or backticks.
LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]+)>?(\s+\"[^\"]*\")?\s*\)")


def rewrite_links(text, page, staged):
    """Keep links to staged files; turn links to anything else in the repository into plain text.

    page: the page's path in the staged tree (posix); staged: the set of staged paths.
    """
    here = posixpath.dirname(page)

    def fix(m):
        bang, label, target, title = m.group(1), m.group(2), m.group(3), m.group(4) or ""
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            return m.group(0)  # http(s)://, mailto:, or an anchor on this page
        path, _, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(here, path))
        if resolved.endswith("/") or resolved in ("", "."):
            resolved = posixpath.join(resolved, "README.md")
        folder_page = posixpath.join(resolved, posixpath.basename(resolved) + ".ipynb")  # course/01_x/ -> its lesson
        for candidate in (resolved, posixpath.join(resolved, "README.md"), posixpath.join(resolved, "index.md"),
                          folder_page):
            if candidate in staged:
                if candidate != resolved:
                    target = posixpath.relpath(candidate, here or ".") + (f"#{anchor}" if anchor else "")
                return f"{bang}[{label}]({target}{title})"
        shown = posixpath.normpath(resolved)
        if shown.startswith(".."):
            shown = path
        if bang:
            return f"*{label}* (`{shown}`)"
        if label.strip("` ").rstrip("/") in (shown, path.rstrip("/")):
            return f"`{shown}`"
        return f"{label} (`{shown}`)"

    out, in_fence = [], None
    for line in text.splitlines(keepends=True):
        m = FENCE.match(line)
        if in_fence:
            if m and m.group(1)[0] == in_fence[0] and len(m.group(1)) >= len(in_fence):
                in_fence = None
            out.append(line)
        elif m:
            in_fence = m.group(1)
            out.append(line)
        else:
            # leave links written inside inline code alone (a label may hold code: [`x`](x))
            spans = [m.span() for m in re.finditer(r"(`+)[^`]+?\1", line)]
            out.append(LINK.sub(lambda m: m.group(0) if any(a <= m.start() < b for a, b in spans) else fix(m), line))
    return "".join(out)


# --- staging ----------------------------------------------------------------------------------

def stage(src, root=ROOT):
    """Copy what the site shows into src (emptied first) and return the staged pages."""
    if src.exists():
        if not (src / MARKER).exists() and any(src.iterdir()):
            raise SystemExit(f"{src} is not empty and not a staging folder of the site: choose another --src")
        shutil.rmtree(src)
    src.mkdir(parents=True)
    (src / MARKER).write_text("staged by tools/site/build.py; emptied on every build\n")
    copies = {}  # staged path -> repository path
    for name in lessons(root):
        copies[f"course/{name}/{name}.ipynb"] = root / "course" / name / f"{name}.ipynb"
    for p in sorted((root / "course").glob("*.md")):
        copies[f"course/{p.name}"] = p
    for p in sorted((root / "course" / "figures").iterdir()):
        if p.suffix in IMAGES:
            copies[f"course/figures/{p.name}"] = p
    for page in doc_pages(root):
        copies[page] = root / page
    for p in sorted((root / "docs").rglob("*")):
        if p.suffix.lower() in IMAGES:
            copies[p.relative_to(root).as_posix()] = p
    if (root / "README.md").exists():
        copies["README.md"] = root / "README.md"
    staged = set(copies) | {"index.md"}

    for rel, origin in copies.items():
        dest = src / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".md"):
            dest.write_text(rewrite_links(origin.read_text(encoding="utf-8"), rel, staged), encoding="utf-8")
        elif rel.endswith(".ipynb"):
            dest.write_text(json.dumps(stage_notebook(origin, rel, staged), indent=1, ensure_ascii=False),
                            encoding="utf-8")
        else:
            shutil.copyfile(origin, dest)

    write_index(src, root)
    return sorted(p for p in staged if p.endswith((".md", ".ipynb")))


def stage_notebook(origin, rel, staged):
    nb = json.loads(origin.read_text(encoding="utf-8"))
    slug = origin.stem
    note = RUN_NOTE.format(slug=slug, num=slug[:2])
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = rewrite_links("".join(cell["source"]), rel, staged)
        elif cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None  # released lessons have none; make sure
    first = nb["cells"][0] if nb["cells"] else None
    if first and first["cell_type"] == "markdown" and first["source"].startswith("# "):
        # after the title, so the page still opens with the lesson's name
        title, _, rest = first["source"].partition("\n")
        first["source"] = f"{title}\n\n{note}\n{rest}"
    else:
        nb["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": note})
    nb["metadata"].pop("widgets", None)  # no widget state: nothing for the page to fetch
    return nb


def write_index(src, root=ROOT):
    lesson_entries = "\n".join(f"course/{name}/{name}" for name in lessons(root))
    reference = "\n".join(f"course/{p.stem}" for p in sorted((root / "course").glob("*.md")))
    docs = "\n".join(p[:-3] for p in doc_pages(root))
    project = "README" if (root / "README.md").exists() else ""
    lesson_list = "\n".join(
        f"{i}. [{title_of_notebook(root / 'course' / name / f'{name}.ipynb')}](course/{name}/{name}.ipynb)"
        for i, name in enumerate(lessons(root), 1))
    doc_list = "\n".join(f"- [{title_of(root / p)}]({p})" for p in doc_pages(root)) or "- (none yet)"
    text = (HERE / "index.md").read_text(encoding="utf-8")
    for key, value in {"LESSONS": lesson_entries, "REFERENCE": reference, "DOCS": docs, "PROJECT": project,
                       "LESSON_LIST": lesson_list, "DOC_LIST": doc_list}.items():
        text = text.replace("{{" + key + "}}", value)
    (src / "index.md").write_text(text, encoding="utf-8")


def title_of_notebook(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


# --- build ------------------------------------------------------------------------------------

def build(out, src, jobs="1", quiet=True):
    """Stage into src and build the HTML into out; returns Sphinx's exit status."""
    from sphinx.cmd.build import build_main

    out, src = Path(out).resolve(), Path(src).resolve()
    stage(src)
    if out.exists():
        # a page deleted from the sources must not linger; only a folder Sphinx built is emptied
        if not (out / ".buildinfo").exists() and any(out.iterdir()):
            raise SystemExit(f"{out} is not empty and not a Sphinx build: choose another --out")
        shutil.rmtree(out)
    # Warnings are errors (broken references, missing images, unknown syntax); keep going to list all.
    # -E: read every source again (the staged copies are new each time); the doctrees live beside src.
    args = ["-b", "html", "-n", "-W", "--keep-going", "-E", "-j", str(jobs), "-c", str(HERE),
            "-d", str(src.parent / (src.name + "-doctrees")), str(src), str(out)]
    if quiet:
        args.insert(0, "-q")
    status = build_main(args)
    sources = out / "_sources"  # empty: the sources are not copied (html_copy_source = False)
    if sources.is_dir() and not any(sources.iterdir()):
        sources.rmdir()
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "site"), help="the HTML site (default build/site)")
    parser.add_argument("--src", default=None, help="scratch folder for the staged sources (default OUT-src)")
    parser.add_argument("-j", "--jobs", default=os.environ.get("SITE_JOBS", "1"), help="Sphinx's parallel jobs")
    parser.add_argument("-v", "--verbose", action="store_true", help="Sphinx's progress, not only its warnings")
    args = parser.parse_args(argv)
    out = Path(args.out)
    src = Path(args.src) if args.src else out.with_name(out.name + "-src")
    start = time.monotonic()
    status = build(out, src, jobs=args.jobs, quiet=not args.verbose)
    if status == 0:
        print(f"site built in {time.monotonic() - start:.0f} s: open {out / 'index.html'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
