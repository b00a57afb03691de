"""The launcher that starts one graded kernel inside bubblewrap.

    python jail.py SPEC.json KERNEL_COMMAND...

jupyter_client runs this as the argv of the grading kernelspec that sandbox.py writes for each
job (students' own kernels never use it). Outside the sandbox, it ties itself to the grading
process (it dies with it), joins the job's cgroups (memory, processes), sets the rlimits (open
files, file size, CPU time), then runs the kernel in bubblewrap: new PID, network, mount, user,
IPC and UTS namespaces, the unprivileged user 65534, a read-only view of the Python environment
and the course library, a private writable scratch folder (the kernel's working folder) and
/tmp, both in memory, and the socket folder through which the kernel talks to nbgrader (ZeroMQ
over unix sockets). Nothing else of the file system is there. When the kernel ends, it records
how in the job folder, outside the sandbox (sandbox.py reads it: a kernel killed by SIGXCPU ran
out of CPU time).

Only the standard library: it starts once per graded notebook.
"""

import json
import os
import resource
import signal
import subprocess
import sys

UID = 65534  # nobody
# What the kernel may see of /etc: the dynamic linker's cache, users and groups, time zone, fonts.
ETC = ["/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group",
       "/etc/nsswitch.conf", "/etc/localtime", "/etc/fonts", "/etc/alternatives"]
# Passed through to the kernel; everything else in the grader's environment stays outside. Not
# JPY_PARENT_PID: in its PID namespace the kernel cannot see that process and would quit; it
# dies with the grader through bubblewrap's --die-with-parent instead.
KEEP_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONHASHSEED", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
            "MKL_NUM_THREADS", "MPLBACKEND")
RLIMITS = {"open_files": "RLIMIT_NOFILE", "file_size": "RLIMIT_FSIZE", "cpu_time": "RLIMIT_CPU",
           "processes": "RLIMIT_NPROC", "memory": "RLIMIT_DATA"}


def bwrap_argv(spec, cwd, command):
    """The bubblewrap command line that runs `command` in the sandbox, in `cwd` (a fresh, empty,
    writable folder in memory at that path)."""
    argv = [spec["bwrap"], "--unshare-all", "--die-with-parent", "--new-session",
            "--uid", str(UID), "--gid", str(UID), "--hostname", "grading", "--clearenv"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/usr"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for path in ETC:
        argv += ["--ro-bind-try", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(spec["tmpfs_size"]), "--tmpfs", "/tmp"]
    for path in sorted(spec["readonly"], key=len):  # parents before children
        argv += ["--ro-bind", path, path]
    argv += ["--bind", spec["sockets"], spec["sockets"]]
    argv += ["--size", str(spec["tmpfs_size"]), "--tmpfs", cwd, "--chdir", cwd]
    argv += ["--remount-ro", "/"]  # the rest of the root (/root, /home, the folders above cwd) is read-only
    env = {"PATH": spec["path"], "HOME": "/tmp", "TMPDIR": "/tmp", "PYTHONNOUSERSITE": "1",
           "PYTHONPATH": spec["pythonpath"], "MPLCONFIGDIR": "/tmp/.matplotlib", "IPYTHONDIR": "/tmp/.ipython",
           "JUPYTER_RUNTIME_DIR": "/tmp/.jupyter", "LANG": "C.UTF-8"}
    env.update({k: os.environ[k] for k in KEEP_ENV if k in os.environ})
    for key, value in sorted(env.items()):
        argv += ["--setenv", key, value]
    return argv + ["--"] + list(command)


def die_with_parent():
    """SIGKILL when the grading process that started us dies, however it dies."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def set_rlimits(rlimits):
    """The job's rlimits on this process and what it starts (zygote.py sets them on a forked kernel)."""
    for name, value in rlimits.items():
        # CPU time: SIGXCPU at the limit (which the grader reports), SIGKILL two seconds later
        hard = value + 2 if name == "cpu_time" else value
        resource.setrlimit(getattr(resource, RLIMITS[name]), (value, hard))


def _enter(spec):
    for group in spec["cgroups"]:
        with open(os.path.join(group, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    set_rlimits(spec["rlimits"])


def main(argv):
    spec_path, command = argv[0], argv[1:]
    parent = os.getppid()
    die_with_parent()
    if os.getppid() != parent:  # the grading process died before prctl took effect
        return 1
    with open(spec_path) as f:
        spec = json.load(f)
    _enter(spec)
    # The kernel is interrupted by a message (the kernelspec says so), never by a signal to us;
    # a shutdown's SIGTERM goes on to bubblewrap, whose namespace dies with it.
    signal.signal(signal.SIGINT, lambda *_: None)
    proc = subprocess.Popen(bwrap_argv(spec, os.getcwd(), command), stdin=subprocess.DEVNULL)
    signal.signal(signal.SIGTERM, lambda *_: proc.kill())
    code = proc.wait()
    with open(spec["status"], "w") as f:
        json.dump({"returncode": code}, f)
    return code if 0 <= code < 256 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
