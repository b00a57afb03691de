"""Where a submission writes files: the path rules of the static audit (audit.py).

Each notebook is graded in a scratch folder of its own, its working directory: a file written there
(a relative path without `..`) or under /tmp (`tempfile` included) is the notebook's own business.
What the audit flags is a write that can only be aimed at the course: a constant absolute path
outside /tmp, a relative path that climbs out with `..`, the home folder, or a path built from an
installed module's `__file__`/`__path__`, `site.getsitepackages()`, `sys.prefix` and the like. A
path it cannot work out before the notebook runs is a caution for the instructor, not a zero: the
sandbox shows the kernel everything but its scratch folder and /tmp read-only or not at all, and
without the sandbox integrity.py finds and restores any change to the course.

The audit's values (what an expression is known to be) are defined here, since paths are the
part of them with the most rules.
"""

import ast
import importlib.util
import posixpath
from functools import lru_cache
from typing import NamedTuple


class Val(NamedTuple):
    """What the audit knows an expression to be.

    kind: "ref" (data: the dotted name of an object reached from an import, e.g. "numpy.isclose"),
    "const" (data: a constant), "place" (data: "cwd", "scratch" or "outside: <why>"), "seq" (a
    literal list, tuple or dict: data holds its elements), "union" (one of data), "globals" (the
    notebook's namespace), "stream" (an open file object), "local" (the student's own object) or
    "unknown" (chosen at run time). is_path: a pathlib path, whose write_text, rename… write."""

    kind: str
    data: object = None
    is_path: bool = False


LOCAL, UNKNOWN, GLOBALS, STREAM = Val("local"), Val("unknown"), Val("globals"), Val("stream")
CWD, SCRATCH = Val("place", "cwd"), Val("place", "scratch")
DEVICES = {"/dev/null", "/dev/stdout", "/dev/stderr"}
ENVIRONMENT = {"sys.prefix", "sys.exec_prefix", "sys.base_prefix", "sys.base_exec_prefix", "sys.executable",
               "sys.path", "site.USER_SITE", "site.USER_BASE"}
MODULE_FILES = ("__file__", "__path__", "__spec__", "__cached__")
CWD_CALLS = {"os.getcwd", "os.getcwdb", "pathlib.Path.cwd", "pathlib.PosixPath.cwd"}
ENV_CALLS = {"site.getsitepackages", "site.getusersitepackages", "site.getuserbase", "sysconfig.get_paths",
             "sysconfig.get_path", "inspect.getfile", "inspect.getsourcefile", "importlib.resources.files",
             "pathlib.Path.home", "pathlib.PosixPath.home"}
TEMP_CALLS = {"tempfile.mkdtemp", "tempfile.mkstemp", "tempfile.gettempdir", "tempfile.NamedTemporaryFile",
              "tempfile.TemporaryDirectory", "tempfile.TemporaryFile", "tempfile.SpooledTemporaryFile"}
JOIN_CALLS = {"os.path.join", "posixpath.join", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath",
              "pathlib.PurePosixPath"}
SAME_CALLS = {"os.path.abspath", "os.path.realpath", "os.path.normpath", "os.path.expanduser", "os.fspath",
              "os.fsencode", "os.fsdecode", "builtins.str"}
STREAM_CALLS = {"builtins.open", "io.open", "io.FileIO", "codecs.open", "io.BytesIO", "io.StringIO", "gzip.open"}
# functions that write, and which positional arguments are the paths they write, remove or create
WRITE_ARGS = {"os.remove": (0,), "os.unlink": (0,), "os.rmdir": (0,), "os.removedirs": (0,), "os.rename": (0, 1),
              "os.renames": (0, 1), "os.replace": (0, 1), "os.truncate": (0,), "os.mkdir": (0,), "os.makedirs": (0,),
              "os.chmod": (0,), "os.chown": (0,), "os.link": (1,), "os.symlink": (1,), "os.utime": (0,),
              "os.mkfifo": (0,), "shutil.copy": (1,), "shutil.copy2": (1,), "shutil.copyfile": (1,),
              "shutil.copytree": (1,), "shutil.copymode": (1,), "shutil.copystat": (1,), "shutil.move": (0, 1),
              "shutil.rmtree": (0,), "shutil.make_archive": (0,), "shutil.unpack_archive": (1,),
              "sqlite3.connect": (0,), "numpy.save": (0,), "numpy.savez": (0,), "numpy.savez_compressed": (0,),
              "numpy.savetxt": (0,), "torch.save": (1,)}
MODE_ARGS = {"builtins.open": 1, "io.open": 1, "io.FileIO": 1, "codecs.open": 1, "gzip.open": 1}
PATH_WRITES = {"write_text", "write_bytes", "touch", "mkdir", "unlink", "rmdir", "rename", "replace", "symlink_to",
               "hardlink_to", "chmod"}  # pathlib methods: the receiver is the path (rename, replace: the argument too)
ANY_WRITES = {"write_text", "write_bytes", "symlink_to", "hardlink_to"}  # names no other common type has
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


@lru_cache(maxsize=None)
def installed(top):
    """Whether a top-level module is installed where the kernel would import it from (the Python
    environment or the course library), as opposed to one the notebook wrote in its own folder."""
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _string(s, moved):
    if isinstance(s, bytes):
        s = s.decode(errors="replace")
    if s.startswith("~"):
        return "outside", "the home folder"
    norm = posixpath.normpath(s) if s else "."
    if posixpath.isabs(norm):
        if norm in DEVICES or norm == "/tmp" or norm.startswith("/tmp/"):
            return "scratch", ""
        return "outside", f"{norm}, outside the notebook's folder and /tmp"
    if moved:
        return "unknown", "a relative path after the notebook changed its working directory"
    if norm == ".." or norm.startswith("../"):
        return "outside", "a path that climbs out of the notebook's folder with .."
    return "scratch", ""


def place(v, moved=False):
    """("scratch" | "outside" | "unknown", why) of a value used as a path to write."""
    if v.kind == "union":
        found = [place(o, moved) for o in v.data]
        return next((p for p in found if p[0] == "outside"), next((p for p in found if p[0] == "unknown"), found[0]))
    if v.kind == "const" and isinstance(v.data, (str, bytes)):
        return _string(v.data, moved)
    if v.kind == "place":
        if v.data.startswith("outside"):
            return "outside", v.data.split(": ", 1)[1]
        return ("unknown", "a path relative to a moved working directory") if moved and v.data == "cwd" else ("scratch", "")
    if v.kind == "ref" and (v.data in ENVIRONMENT or v.data.rpartition(".")[2] in MODULE_FILES):
        return "outside", f"{v.data}, in the Python environment or the course library"
    if v.kind == "const" and isinstance(v.data, int):
        return "scratch", ""  # a file descriptor the notebook opened
    return "unknown", "a path worked out only when the notebook runs"


def _outside(why):
    return Val("place", f"outside: {why}")


def _climbs(s):
    norm = posixpath.normpath(s)
    return norm == ".." or norm.startswith("../")


def join(vals, is_path=False):
    """The value of os.path.join(*vals), or of Path(*vals) and vals[0] / vals[1] (is_path)."""
    result = CWD if not vals else None
    for v in vals:
        if v.kind == "const" and isinstance(v.data, str):
            if result is None or posixpath.isabs(v.data):
                result = v
            elif result.kind == "const":
                result = Val("const", posixpath.join(result.data, v.data))
            elif result.kind == "place" and _climbs(v.data):
                result = _outside("the folder above the notebook's") if result.data == "cwd" else UNKNOWN
            elif result.kind == "place" and result.data == "cwd":
                result = SCRATCH
        elif v.kind == "place" or place(v)[0] == "outside":
            result = v if v.kind == "place" else _outside(place(v)[1])
        elif not (result is not None and place(result)[0] == "outside"):
            result = UNKNOWN  # a course folder joined with anything stays a course folder
    return result._replace(is_path=is_path) if result.kind in ("const", "place") else result


def dirname(v):
    if v.kind == "const" and isinstance(v.data, str):
        return Val("const", posixpath.dirname(v.data), v.is_path)
    if v.kind == "place":
        return _outside("the folder above the notebook's") if v.data == "cwd" else v
    return v if place(v)[0] == "outside" else UNKNOWN


def absolute(v):
    """os.path.abspath, Path.resolve(): a relative constant becomes a place under the working directory."""
    if v.kind == "const" and isinstance(v.data, str) and not posixpath.isabs(v.data) and not v.data.startswith("~"):
        norm = posixpath.normpath(v.data or ".")
        return CWD if norm == "." else join([CWD, v])
    return v


def joined_string(parts):
    """An f-string or a + b: constant when every part is, else what its constant parts tell."""
    if all(p.kind == "const" and isinstance(p.data, str) for p in parts):
        return Val("const", "".join(p.data for p in parts))
    if any(p.kind == "const" and isinstance(p.data, str) and ".." in p.data.split("/") for p in parts):
        return _outside("a path that climbs out of the notebook's folder with ..")
    first = parts[0]
    if first.kind == "const" and isinstance(first.data, str):
        if posixpath.isabs(first.data) or first.data.startswith("~"):
            kind, why = _string(first.data.rpartition("/")[0] or "/", False)
            return SCRATCH if kind == "scratch" else _outside(why)
        return SCRATCH  # relative: it starts in the notebook's folder
    return first if first.kind == "place" else UNKNOWN


def path_call(name, args, kwargs):
    """The value of a call to `name` (a dotted name) when it makes a path or a file object, else None.
    args: the Vals of the positional arguments; kwargs: {keyword: Val}."""
    v = _path_call(name, args, kwargs)
    return v._replace(is_path=True) if v is not None and name.startswith("pathlib.") and v.kind != "unknown" else v


def _path_call(name, args, kwargs):
    if name in CWD_CALLS:
        return CWD
    if name in ENV_CALLS:
        return _outside(f"{name}(), in the Python environment or the course library")
    if name in TEMP_CALLS:
        where = kwargs.get("dir")
        return SCRATCH if where is None or place(where)[0] == "scratch" else where
    if name in JOIN_CALLS:
        return join(args, name.startswith("pathlib."))
    if name in SAME_CALLS and args:
        return args[0] if name != "os.path.abspath" and name != "os.path.realpath" else absolute(args[0])
    if name == "os.path.dirname" and args:
        return dirname(args[0])
    if name in STREAM_CALLS:
        return STREAM
    return None


def path_method(receiver, method, args):
    """The value of receiver.method(*args) for pathlib's path-making methods, else None."""
    if not receiver.is_path:
        return None
    if method in ("resolve", "absolute"):
        return absolute(receiver)._replace(is_path=True)
    if method in ("expanduser", "with_name", "with_suffix", "with_stem"):
        return receiver
    if method == "joinpath":
        return join([receiver] + list(args), True)
    if method == "open":
        return STREAM
    return None


def path_attr(base, attr):
    """The value of base.attr for a path's parent and a module's file, else None."""
    if attr in ("parent", "parents") and base.is_path:
        return dirname(base)._replace(is_path=True) if base.kind != "unknown" else base
    if base.kind == "ref" and attr in MODULE_FILES and installed(base.data.split(".")[0]):
        return _outside(f"{base.data}.{attr}, in the Python environment or the course library")
    if base.kind == "ref" and f"{base.data}.{attr}" in ENVIRONMENT:
        return _outside(f"{base.data}.{attr}, the Python environment")
    if base.kind == "ref" and f"{base.data}.{attr}" == "os.devnull":
        return Val("const", "/dev/null")
    return None


def write_mode(mode):
    """True (writes), False (reads) or None (cannot tell) for open()'s mode."""
    if mode is None:
        return False
    if mode.kind == "const" and isinstance(mode.data, str):
        return any(c in mode.data for c in "wax+")
    if mode.kind == "union":
        found = {write_mode(o) for o in mode.data}
        return True if found == {True} else (False if found == {False} else None)
    return None


def written(node, name, receiver, ev):
    """[(path expression, writes: True, False or None for "cannot tell")] of a call that writes
    files: open() and its kind by their mode, os.open by its flags, WRITE_ARGS's functions, pathlib's
    methods on a path (receiver: the Val of the object a method is called on, else None)."""
    a, kw, found = node.args, {k.arg: k.value for k in node.keywords if k.arg}, []
    if name in MODE_ARGS and (a or "file" in kw):
        i = MODE_ARGS[name]
        mode = a[i] if len(a) > i else kw.get("mode")
        found.append((a[0] if a else kw["file"], write_mode(ev(mode) if mode is not None else None)))
    elif name == "os.open" and a:
        flags = {n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", "") for n in ast.walk(node)}
        found.append((a[0], True if flags & WRITE_FLAGS else (False if "O_RDONLY" in flags else None)))
    elif name in WRITE_ARGS:
        found += [(a[i], True) for i in WRITE_ARGS[name] if i < len(a)]
        found += [(v, True) for k, v in kw.items() if k in ("dst", "file", "f", "fname", "path", "database",
                                                          "base_name", "extract_dir")]
    elif receiver is not None:
        method = node.func.attr
        if method in PATH_WRITES and (receiver.is_path or method in ANY_WRITES):
            found.append((node.func.value, True))
            if method in ("rename", "replace") and a:
                found.append((a[0], True))
        elif method == "open" and receiver.is_path:
            mode = a[0] if a else kw.get("mode")
            found.append((node.func.value, write_mode(ev(mode) if mode is not None else None)))
        elif method == "tofile" and a:
            found.append((a[0], True))
    return found
