"""The kernel zygote: one sandboxed Python per grading run, with a kernel's imports already done, that
forks a kernel for each graded notebook.

    bwrap … python zygote.py ROOT MODULE…      (sandbox_start.start_zygote starts it)
    (a MODULE written "package.module:function" is imported, then the function called)

It runs in bubblewrap like any graded kernel (jail.py), with the run's job folders (ROOT) as its only
writable folder, imports the MODULEs (ipykernel, NumPy, Matplotlib, the course library, the lessons'
checkers), never any student's code, and then listens on ROOT/zygote.sock. zygote_client.py, the job's
kernelspec, sends one request per kernel, a line of JSON: the job's socket folder, the kernel's
arguments, its limits and the name of its working folder. For each request the zygote forks a child
that makes a sandbox of its own inside the zygote's before anything of the student's runs:

- new user, mount, PID, network, IPC and UTS namespaces (nothing of another kernel can be seen,
  signalled or reached through a socket);
- a fresh /tmp in memory (the kernel's working folder is in it), a fresh /dev/shm, an empty /proc, and
  the job's socket folder bound back in: the zygote's own files and the other jobs' folders are gone;
- every capability dropped, so that none of this can be undone.

The child then forks the PID namespace's first process, which reaps and forks the kernel: the kernel
tells zygote_client.py that it is there (which puts it in the job's cgroups), sets the job's rlimits,
draws new random seeds, and starts ipykernel. The child reports how the kernel ended ("exit N") on the
request's connection; when that connection closes first (the grading process is gone, or it killed
the kernel), the child kills the whole namespace.

Only the standard library and jail.py (its rlimits), besides the MODULEs.
"""

import ctypes
import importlib
import json
import os
import select
import signal
import socket
import sys

try:
    from . import jail
except ImportError:  # run as a script, beside its copy of jail.py
    import jail

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_MOVE = 1, 2, 4, 32, 4096, 8192
MS_REC, MS_PRIVATE = 16384, 1 << 18
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
SOCKET = "zygote.sock"
HELLO = "hello.sock"
PROC_FILES = ("cpuinfo", "meminfo", "stat", "loadavg", "uptime", "version", "filesystems")  # the machine's
DEV_FILES = ("null", "zero", "full", "random", "urandom", "tty")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
             "stderr": "/proc/self/fd/2"}  # in the job's socket folder: where the kernel says that it is there

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    _check(_libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                       data and data.encode()), f"mount {target}")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def drop_capabilities():
    """No capability left, in any set, for this process and what it starts."""
    for cap in range(64):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last capability: ignored
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    _check(_libc.capset(ctypes.byref(header), (_CapData * 2)()), "capset")


def make_sandbox(sockets, readonly, size, workdir):
    """In a forked child of the zygote: namespaces of its own, a fresh /tmp holding `workdir`, the
    job's socket folder and the `readonly` folders that were under /tmp bound back in, no
    capabilities."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
           "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    back = [(p, True) for p in sorted(readonly, key=len) if p.startswith("/tmp/")] + [(sockets, False)]
    kept = [(path, ro, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path, ro in back]  # before /tmp is replaced
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    for path, ro, fd in kept:
        os.makedirs(path, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        if ro:
            _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    os.makedirs(workdir, exist_ok=True)
    _replace("/dev", DEV_FILES, DEV_LINKS)
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    _replace("/proc", PROC_FILES, {})  # a new /proc cannot be mounted inside bubblewrap's
    drop_capabilities()


def _replace(top, files, links):
    """`top` made anew, read-only, holding only `files` of the old one (bound in) and `links`:
    nothing of another kernel (/dev) or of another process (/proc) is left there."""
    staging = f"/tmp/.{top.strip('/')}-{os.getpid()}"
    os.mkdir(staging)
    _mount("tmpfs", staging, "tmpfs", MS_NOSUID, "size=64k,mode=755")
    for name in files:
        try:
            fd = os.open(os.path.join(top, name), os.O_PATH)
        except OSError:
            continue
        with open(os.path.join(staging, name), "w"):
            pass
        _mount(f"/proc/self/fd/{fd}", os.path.join(staging, name), None, MS_BIND)
        os.close(fd)
    for name, target in links.items():
        os.symlink(target, os.path.join(staging, name))
    if top == "/dev":
        os.mkdir(os.path.join(staging, "shm"))
    _mount(staging, top, None, MS_MOVE)
    _mount(None, top, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID, "size=64k,mode=755")
    os.rmdir(staging)


def _read_request(conn):
    """The request, and the client's stdin, stdout and stderr, which become the kernel's."""
    conn.settimeout(30)
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            raise EOFError("the request ended early")
        data += chunk
    conn.settimeout(None)
    return json.loads(data), fds


def _kernel(request):
    """The kernel, the PID namespace's second process."""
    os.setsid()
    hello = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hello.settimeout(60)
    hello.connect(os.path.join(request["sockets"], HELLO))
    if hello.recv(2) != b"go":  # zygote_client.py has put this process in the job's cgroups
        raise RuntimeError("no go from the client")
    hello.close()
    jail.set_rlimits(request["rlimits"])
    import random
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    os.chdir(request["workdir"])
    if request["argv"][:1] == ["-c"]:  # a command instead of a kernel, as `python -c` runs it (the tests)
        sys.argv = request["argv"][:1] + request["argv"][2:]
        exec(compile(request["argv"][1], "<string>", "exec"), {"__name__": "__main__"})
        return
    from ipykernel import kernelapp
    sys.argv = [os.path.join(os.path.dirname(kernelapp.__file__), "..", "ipykernel_launcher.py")] + request["argv"]
    kernelapp.launch_new_instance()


def _init(request):
    """The PID namespace's first process: forks the kernel, reaps, and ends with the kernel's status
    (128 + the signal when a signal ended it), which ends every process of the namespace."""
    jail.die_with_parent()
    kernel = os.fork()
    if kernel == 0:
        code = 1
        try:
            _kernel(request)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # as Python reports an uncaught exception: on the kernel's stderr
            import traceback
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code)
    while True:
        pid, status = os.wait()
        if pid == kernel:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


def _child(conn):
    """One request: a sandbox of its own, its first process, and the report of how the kernel ended."""
    jail.die_with_parent()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    request, fds = _read_request(conn)
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
        os.close(fd)
    workdir = os.path.join("/tmp", os.path.basename(request.get("workdir_name", "")) or "work")
    request["workdir"] = workdir
    make_sandbox(request["sockets"], request.get("readonly", []), int(request["tmpfs_size"]), workdir)
    first = os.fork()  # PID 1 of the new namespace
    if first == 0:
        conn.close()
        _init(request)
    pidfd = os.pidfd_open(first)
    ready, _, _ = select.select([conn, pidfd], [], [])
    if conn in ready and pidfd not in ready:  # the client went away first: end the namespace
        os.kill(first, signal.SIGKILL)
    _, status = os.waitpid(first, 0)
    code = os.waitstatus_to_exitcode(status)
    try:
        conn.sendall(f"exit {code if code >= 0 else 128 - code}\n".encode())
    except OSError:
        pass


def serve(root, modules):
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")  # as ipykernel sets it
    for name in modules:  # "package.module", or "package.module:function" to import and call
        try:
            module, _, call = name.partition(":")
            loaded = importlib.import_module(module)
            if call:
                getattr(loaded, call)()
        except Exception as exc:  # a module that is missing costs its kernels the import, nothing else
            print(f"zygote: {name} not imported: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(os.path.join(root, SOCKET))
    server.listen(128)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children are reaped by the kernel
    log = os.dup(2)  # the zygote's log, kept when a child takes its client's stderr
    print("ready", flush=True)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)  # nothing more to say; each kernel writes to its own client's stdout
    while True:
        conn, _ = server.accept()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                server.close()
                _child(conn)
            except BaseException as exc:
                os.write(log, f"zygote: a kernel could not start: {type(exc).__name__}: {exc}\n".encode())
                code = 1
            finally:
                os._exit(code)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
