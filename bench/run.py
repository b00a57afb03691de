"""make bench: every benchmark of the course, side by side, with the machine named.

Each bench/bench_*.py module defines `run(quick=False) -> list of rows`, a row being a dict
with keys: group, name, value, unit, and optionally note. Ratios are measured in one run,
side by side. Results go to bench/results.json and a table on stdout.

    python bench/run.py                 # everything
    python bench/run.py kv capstone     # only modules whose name contains one of these words; the
                                        # other modules' rows of the last results are kept, dated
"""

import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def machine():
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import torch
        info["torch"] = torch.__version__
        info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    except ImportError:
        info["gpu"] = "unknown (torch not installed)"
    return info


def previous_rows():
    """The rows of the last results.json, each dated with the run that measured it."""
    try:
        last = json.loads((HERE / "results.json").read_text())
    except (OSError, ValueError):
        return []
    return [{"measured": last.get("date", ""), **row} for row in last.get("rows", [])
            if isinstance(row, dict) and "module" in row]


def main(argv):
    quick = "--quick" in argv
    words = [a for a in argv if not a.startswith("--")]
    modules = sorted(HERE.glob("bench_*.py"))
    if words:
        modules = [m for m in modules if any(w in m.stem for w in words)]
    rows = []
    for path in modules:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        start = time.perf_counter()
        print(f"running {path.stem} ...", flush=True)
        for row in mod.run(quick=quick):
            rows.append({"module": path.stem, **row})
        print(f"  {path.stem} took {time.perf_counter() - start:.1f} s", flush=True)
    info = machine()
    if words:  # a partial run keeps the other modules' rows of the last results, each with its own date
        ran = {path.stem for path in modules}
        rows = [row for row in previous_rows() if row["module"] not in ran] + rows
    result = {"machine": info, "date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}
    (HERE / "results.json").write_text(json.dumps(result, indent=2))
    print()
    print(f"Machine: {info['cpu']}, {info['cores']} cores, GPU: {info['gpu']}, "
          f"Python {info['python']}, torch {info.get('torch', '-')}")
    width = max([len(r["name"]) for r in rows] + [10])
    group = None
    for r in rows:
        if r["group"] != group:
            group = r["group"]
            print(f"\n{group}")
        value = r["value"]
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"  {r['name']:<{width}}  {shown:>12} {r.get('unit', ''):<14} {r.get('note', '')}")
    print(f"\nwritten to {HERE / 'results.json'}")


if __name__ == "__main__":
    main(sys.argv[1:])
