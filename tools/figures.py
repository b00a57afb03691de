"""Render the diagrams the lessons embed into solutions/figures/ (release copies them to course/figures/).

    python tools/figures.py            # write every figure as SVG
    python tools/figures.py --check    # exit 1 if a committed figure differs from what the code draws

The drawings live in encdec.plotting.diagrams; lessons show them with a Markdown image,
![alt text](../figures/<name>.svg), so the picture is there before any cell runs.
"""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "solutions" / "figures"


def main(argv):
    import matplotlib
    matplotlib.use("Agg")
    from encdec.plotting.diagrams import render_all

    if "--check" not in argv:
        for name in sorted(render_all(FIGURES)):
            print(f"drew solutions/figures/{name}.svg")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        render_all(fresh)
        drawn = {p.name: p.read_bytes() for p in fresh.glob("*.svg")}
    committed = {p.name: p.read_bytes() for p in FIGURES.glob("*.svg")} if FIGURES.exists() else {}
    stale = sorted(name for name in drawn.keys() | committed.keys() if drawn.get(name) != committed.get(name))
    if stale:
        print("out of date with encdec.plotting.diagrams (run `make notebooks`): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
