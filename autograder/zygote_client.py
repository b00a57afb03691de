"""The kernelspec of a job whose kernel the run's zygote forks (zygote.py), outside the sandbox.

    python zygote_client.py SPEC.json KERNEL_ARGUMENTS...

jupyter_client runs this as the kernel's process, as it would run jail.py. It ties itself to the
grading process (it dies with it), asks the zygote for a kernel (the job's socket folder, the
kernel's arguments, its limits, the name of its working folder), waits for the kernel to say that it
is there on the job's hello socket, puts it in the job's cgroups (the kernel's process id comes from
the socket's credentials, as this side sees it), lets it go on, and then waits for the zygote's
report of how it ended, which it records in the job folder as jail.py does (status.json). Killed,
or its grading process gone, it closes its connection and the zygote ends the kernel's namespace.

Where the zygote cannot be reached, or fails before the kernel is there, the kernel starts as every
kernel did before the zygote: jail.py, a bubblewrap of its own.

Only the standard library: it starts once per graded notebook.
"""

import json
import os
import select
import signal
import socket
import struct
import sys

try:
    from . import jail
except ImportError:  # run as a script, beside jail.py
    import jail

HELLO_TIMEOUT = 60


def _fallback(spec_path, args):
    """The kernel in a bubblewrap of its own (jail.py), with the same arguments."""
    kernel = [sys.executable, *args] if args[:1] == ["-c"] else [sys.executable, "-m", "ipykernel_launcher", *args]
    argv = [sys.executable, jail.__file__, spec_path, *kernel]
    os.execv(sys.executable, argv)


def _peer_pid(conn):
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[0]


def _join_cgroups(pid, groups):
    for group in groups:
        with open(os.path.join(group, "cgroup.procs"), "w") as f:
            f.write(str(pid))


def _record(spec, code):
    with open(spec["status"], "w") as f:
        json.dump({"returncode": code}, f)


def main(argv):
    spec_path, args = argv[0], argv[1:]
    parent = os.getppid()
    jail.die_with_parent()
    if os.getppid() != parent:
        return 1
    with open(spec_path) as f:
        spec = json.load(f)
    signal.signal(signal.SIGINT, lambda *_: None)  # interrupts are messages to the kernel
    hello_path = os.path.join(spec["sockets"], "hello.sock")
    hello = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hello.bind(hello_path)
    hello.listen(1)
    zygote = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        zygote.connect(spec["zygote"])
        request = {"sockets": spec["sockets"], "argv": args, "rlimits": spec["rlimits"], "readonly": spec["readonly"],
                   "tmpfs_size": spec["tmpfs_size"], "workdir_name": os.path.basename(os.getcwd())}
        socket.send_fds(zygote, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    except OSError:
        hello.close()
        os.unlink(hello_path)
        return _fallback(spec_path, args)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))  # the connection closes: the zygote ends the kernel
    ready, _, _ = select.select([hello, zygote], [], [], HELLO_TIMEOUT)
    if hello not in ready:  # the zygote failed (or took too long) before the kernel was there
        zygote.close()
        hello.close()
        os.unlink(hello_path)
        return _fallback(spec_path, args)
    conn, _ = hello.accept()
    _join_cgroups(_peer_pid(conn), spec["cgroups"])
    conn.sendall(b"go")
    conn.close()
    hello.close()
    report = b""
    while True:
        chunk = zygote.recv(64)
        if not chunk:
            break
        report += chunk
    try:
        code = int(report.decode().split()[1])
    except (IndexError, ValueError):
        code = 1
    _record(spec, code)
    return code if 0 <= code < 256 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
