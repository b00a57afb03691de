"""Build the nbgrader source notebooks in solutions/ from their percent-format sources in authoring/.

    python tools/nbbuild.py            # build every authoring/NN_slug.py into solutions/NN_slug/NN_slug.ipynb
    python tools/nbbuild.py --check    # exit 1 if a committed notebook differs from its source
    python tools/nbbuild.py 05         # only the lessons whose name starts with 05

A source is plain Python with cell markers:

    # %% [markdown]                 a Markdown cell; each line starts with "# " (or is "#")
    # %%                            an ordinary code cell
    # %% [setup] grade_id           a locked code cell (nbgrader restores it when grading)
    # %% [solution] grade_id        an answer cell: ### BEGIN SOLUTION ... ### END SOLUTION
    # %% [test] grade_id points=3   an autograded test cell worth 3 points
    # %% [demo]                     a code cell tagged "demo": figures, widgets, training runs;
                                    never needed by a graded cell, skipped when grading at scale
"""

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
HEADER = re.compile(r"^# %%(?:\s*\[(\w+)\])?\s*(.*)$")
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _nbgrader(kind, grade_id, points=None):
    meta = {"grade": kind == "test", "grade_id": grade_id, "locked": kind in ("test", "setup"),
            "schema_version": 3, "solution": kind == "solution", "task": False}
    if kind == "test":
        meta["points"] = points
    return meta


def parse(text, name):
    """Split a percent-format source into (kind, options, body) triples."""
    cells, current = [], None
    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            if current:
                cells.append(current)
            current = [m.group(1) or "code", m.group(2).strip(), []]
            continue
        if current is None:
            if line.strip():
                raise ValueError(f"{name}: text before the first '# %%' marker: {line!r}")
            continue
        current[2].append(line)
    if current:
        cells.append(current)
    return cells


def build(source_path):
    text = Path(source_path).read_text()
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": KERNEL, "language_info": {"name": "python"}}
    ids = set()
    for index, (kind, options, lines) in enumerate(parse(text, source_path.name)):
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if kind == "markdown":
            body = "\n".join(re.sub(r"^# ?", "", ln) if ln.startswith("#") else ln for ln in lines)
            cell = nbformat.v4.new_markdown_cell(body)
            cell.id = f"md-{index:03d}"
        elif kind in ("code", "demo", "setup", "solution", "test"):
            cell = nbformat.v4.new_code_cell("\n".join(lines))
            words = options.split()
            grade_id = words[0] if words and "=" not in words[0] else None
            opts = dict(w.split("=", 1) for w in words if "=" in w)
            if kind in ("setup", "solution", "test"):
                if not grade_id:
                    raise ValueError(f"{source_path.name}: a [{kind}] cell needs a grade_id (cell {index})")
                points = float(opts["points"]) if kind == "test" else None
                if kind == "test" and points is not None and points == int(points):
                    points = int(points)
                cell.metadata["nbgrader"] = _nbgrader(kind, grade_id, points)
                cell.id = grade_id
            else:
                cell.id = f"code-{index:03d}"
            if kind == "demo":
                cell.metadata["tags"] = ["demo"]
        else:
            raise ValueError(f"{source_path.name}: unknown cell kind [{kind}]")
        if cell.id in ids:
            raise ValueError(f"{source_path.name}: duplicate cell id {cell.id}")
        ids.add(cell.id)
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def target_of(source_path):
    slug = source_path.stem
    return ROOT / "solutions" / slug / f"{slug}.ipynb"


def render(nb):
    return nbformat.writes(nb) + "\n"


def main(argv):
    sources = sorted((ROOT / "authoring").glob("[0-9][0-9]_*.py"))
    only = [a for a in argv if not a.startswith("--")]
    if only:
        sources = [s for s in sources if any(s.stem.startswith(o) for o in only)]
    stale = []
    for src in sources:
        text = render(build(src))
        target = target_of(src)
        if "--check" in argv:
            if not target.exists() or target.read_text() != text:
                stale.append(str(target.relative_to(ROOT)))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists() or target.read_text() != text:
                target.write_text(text)
                print(f"built {target.relative_to(ROOT)}")
    if stale:
        print("out of date with authoring/ (run `make notebooks`): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
