"""`make class` and `make class-stop`: the course served to a class from a JupyterHub on this machine.

    python tools/class/class_hub.py start [--students 3] [--port 8000]   # as root
    python tools/class/class_hub.py stop

Everything the class needs lives under one folder, CLASS_DIR (default /srv/encdec-class):

    hub/       the hub's database, cookie secret, pid files, log, settings and passwords (root only)
    proxy/     configurable-http-proxy, from npm
    env/       the Python environment every user's server runs: a copy of the course's .venv with
               the course library copied in (students cannot read the course folder itself)
    config/    the users' Jupyter configuration: the student JupyterLab of tools/lab/, with the
               class's nbgrader exchange and course id
    exchange/  nbgrader's exchange: released lessons, submissions (inbound), feedback

It makes one instructor and N students as Linux users (a user's home is private to them), makes the
course folder private (it holds the solutions, the gradebook and every submission), releases the
lessons into the exchange, and starts the hub in the background. The hub runs as root, as
JupyterHub's LocalProcessSpawner needs, and starts each user's JupyterLab as that user. nbgrader's
formgrader runs as a hub service (`/services/encdec/`) that only the instructor may open, run by
the course folder's owner, who grades with `make collect`, `make autograde`,
`make release-feedback` and `make export`.
"""

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENV = (ROOT / ".venv").resolve()  # the course's environment, wherever a link to it points
PROXY_VERSION = "5.3.0"  # configurable-http-proxy, from npm
INSTRUCTOR = "instructor"
COURSE_ID = "encdec"  # autograder/nbgrader_config.py's course id


def class_dir():
    return Path(os.environ.get("CLASS_DIR", "/srv/encdec-class")).resolve()


def student_names(n):
    return [f"student{i}" for i in range(1, n + 1)]


def student_password(name):
    """The documented demonstration password of a student account (docs/class.md, "Logging in")."""
    return f"{name}-encdec"


def say(text):
    print(text, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


# -- what the machine must have ----------------------------------------------------------------------
def require_root():
    if sys.platform != "linux":
        raise SystemExit("error: make class runs a JupyterHub with Linux users; this is not Linux")
    if os.geteuid() != 0:
        raise SystemExit("error: make class creates Linux users and runs the hub that starts their "
                         "servers as them, so it needs root: sudo make class")


def apt_install(*packages):
    say(f"installing {' '.join(packages)} from Debian's packages ...")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    run(["apt-get", "update", "-qq"], env=env)
    run(["apt-get", "install", "-y", "-qq", *packages], env=env, stdout=subprocess.DEVNULL)


def ensure_proxy(cls):
    """configurable-http-proxy from npm under CLASS_DIR/proxy (Node and npm from Debian where missing)."""
    proxy = cls / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
    if proxy.exists():
        return proxy
    if not shutil.which("node") or not shutil.which("npm"):
        if not shutil.which("apt-get"):
            raise SystemExit("error: the hub's proxy needs Node.js and npm; install them and run make class again")
        apt_install("nodejs", "npm")
    say(f"installing configurable-http-proxy {PROXY_VERSION} from npm ...")
    (cls / "proxy").mkdir(parents=True, exist_ok=True)
    run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(cls / "proxy"),
         f"configurable-http-proxy@{PROXY_VERSION}"])
    return proxy


def ensure_env(cls):
    """CLASS_DIR/env: the course's .venv copied where every user can read it, with the course
    library copied in instead of the editable link into the (private) course folder. Rebuilt when
    the course's environment or library changes."""
    env = cls / "env"
    stamp = env / ".class-stamp"
    want = json.dumps({"venv": (VENV / ".installed").stat().st_mtime_ns,
                       "lib": sorted((str(p.relative_to(ROOT)), p.stat().st_mtime_ns)
                                     for p in (ROOT / "lib").rglob("*.py"))})
    if stamp.exists() and stamp.read_text() == want:
        return env
    say(f"copying the course's Python environment to {env} ...")
    if env.is_symlink() or env.resolve() == VENV or VENV in env.resolve().parents:
        raise SystemExit(f"error: {env} must be a folder of its own, not the course's environment {VENV}")
    if env.exists():
        shutil.rmtree(env)
    try:  # hard links where the folders share a file system (nothing in the copy is edited in place)
        run(["cp", "-al", str(VENV), str(env)], stderr=subprocess.DEVNULL)
    except subprocess.CalledProcessError:
        shutil.rmtree(env, ignore_errors=True)
        run(["cp", "-a", str(VENV), str(env)])
    for script in (env / "bin").iterdir():  # scripts name the interpreter of the venv they were made in
        if script.is_file() and not script.is_symlink():
            head = script.read_bytes()[:200]
            if head.startswith(b"#!" + str(VENV).encode()):
                text = script.read_bytes().replace(str(VENV).encode(), str(env).encode(), 1)
                script.unlink()
                script.write_bytes(text)
                script.chmod(0o755)
    base = shared_interpreter()
    for name in ("python3", f"python{sys.version_info.major}.{sys.version_info.minor}"):
        (env / "bin" / name).unlink(missing_ok=True)
    (env / "bin" / "python3").symlink_to(base)
    (env / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}").symlink_to("python3")
    cfg = env / "pyvenv.cfg"
    lines = [line for line in cfg.read_text().splitlines() if not line.startswith(("home ", "executable "))]
    cfg.unlink()
    cfg.write_text("\n".join([f"home = {base.parent}", *lines, f"executable = {base}"]) + "\n")
    site = next((env / "lib").glob("python3*/site-packages"))
    for link in site.glob("__editable__*encdec*"):
        link.unlink()
    shutil.copytree(ROOT / "lib" / "encdec", site / "encdec", ignore=shutil.ignore_patterns("__pycache__"))
    stamp.write_text(want)
    return env


def shared_interpreter():
    """A Python of the course's version that every user may run: the one the course's .venv was
    made from when others can reach it, else the system's (a Python kept in root's home, as pyenv
    keeps it, is closed to the students). The packages of the .venv are the same for both."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = Path(sys._base_executable).resolve()
    for candidate in (base, Path("/usr/bin") / version, Path("/usr/local/bin") / version):
        if candidate.exists() and reachable_by_others(candidate) and os.stat(candidate).st_mode & 0o001:
            return candidate
    raise SystemExit(f"error: the class's users need a {version} they may run: {base} is closed to them; "
                     f"install one (apt-get install {version}) and run make class again")


# -- users, folders, permissions ----------------------------------------------------------------------
def ensure_user(name):
    import pwd
    try:
        pwd.getpwnam(name)
    except KeyError:
        run(["useradd", "--create-home", "--shell", "/bin/bash", name])
    home = Path(pwd.getpwnam(name).pw_dir)
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)  # no one reads another's notebooks


def reachable_by_others(path):
    """Whether a user who is not the owner (nor in its group) can reach `path`."""
    path = Path(path)
    for folder in [*reversed(path.parents), path]:
        if not os.stat(folder).st_mode & 0o001:
            return False
    return True


def make_course_private():
    """The course folder holds the solutions, the gradebook and every collected submission: only
    its owner (and group) may enter it once students have accounts on this machine."""
    if reachable_by_others(ROOT):
        mode = os.stat(ROOT).st_mode & 0o7777
        os.chmod(ROOT, mode & ~0o007)
        say(f"{ROOT} is now private to its owner and group (was {oct(mode)[2:]}, now {oct(mode & ~0o007)[2:]}): "
            "students log in to this machine")


MARKER = ".encdec-class"  # in a CLASS_DIR that make class made: the only kind it changes or empties


def check_class_dir(cls):
    if cls == ROOT or ROOT in cls.parents:
        raise SystemExit(f"error: CLASS_DIR={cls} is inside the course folder, which students cannot read; "
                         "choose a folder outside it (the default is /srv/encdec-class)")
    if cls.exists() and any(cls.iterdir()) and not (cls / MARKER).exists():
        raise SystemExit(f"error: CLASS_DIR={cls} already holds files that make class did not make; "
                         "choose a new or empty folder (the default is /srv/encdec-class)")
    if not (cls / MARKER).exists():
        cls.mkdir(parents=True, exist_ok=True)
        os.chmod(cls, 0o755)
        (cls / MARKER).write_text("made by make class (tools/class/class_hub.py)\n")
    if not reachable_by_others(cls):
        raise SystemExit(f"error: students cannot reach CLASS_DIR={cls}: a folder above it is closed to "
                         "other users; choose another (the default is /srv/encdec-class)")


def write_user_config(cls):
    """CLASS_DIR/config/user: the student JupyterLab of tools/lab/ (no instructor tools), with the
    class's exchange. Every user's server reads it first (JUPYTER_CONFIG_PATH)."""
    user = cls / "config" / "user"
    if user.exists():
        shutil.rmtree(user)
    shutil.copytree(ROOT / "tools" / "lab", user, ignore=shutil.ignore_patterns("README.md", "nbgrader_config.py"))
    (user / "nbgrader_config.py").write_text(
        '"""nbgrader in the class\'s JupyterLab (written by tools/class/class_hub.py)."""\n\n'
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(cls / 'exchange')!r}\n"
        "c.Execute.timeout = 60  # seconds per cell, as when grading\n")
    for path in [user, *user.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)


def ensure_exchange(cls):
    """nbgrader's exchange: its root writable by everyone, as nbgrader documents, and sticky (1777,
    as /tmp), so that no student can rename or replace the course's folder in it; nbgrader itself
    makes the course's inbound folder write-only for students and its feedback folder unlistable."""
    exchange = cls / "exchange"
    exchange.mkdir(exist_ok=True)
    os.chmod(exchange, 0o1777)
    return exchange


def nbgrader_env(cls):
    return {**os.environ, "CLASS_DIR": str(cls), "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}


def release_lessons(cls, lessons):
    """The lessons of course/ into the exchange's outbound folder, as the course folder's owner."""
    owner = course_owner()  # who grades: the exchange's course folder must be theirs, as nbgrader expects
    as_owner = [] if owner == "root" else ["runuser", "-u", owner, "--"]
    for lesson in lessons:
        run([*as_owner, str(VENV / "bin" / "python"), "-m", "autograder", "publish", "--lesson", lesson],
            cwd=ROOT, env=nbgrader_env(cls), stdout=subprocess.DEVNULL)
    say(f"released into the exchange: {', '.join(lessons)}")


def passwords(cls, students):
    """{user: password}: the students' documented ones, the instructor's made once and kept."""
    path = cls / "hub" / "passwords.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    table = {INSTRUCTOR: old.get(INSTRUCTOR) or secrets.token_urlsafe(12)}
    table.update({s: student_password(s) for s in students})
    path.write_text(json.dumps(table, indent=1))
    os.chmod(path, 0o600)
    return table


# -- the hub -----------------------------------------------------------------------------------------
def hub_pid(cls):
    """The running hub's pid, from its pid file; None when the file is missing or stale (the hub
    ended without removing it, and the number may now be another process's)."""
    path = cls / "hub" / "jupyterhub.pid"
    try:
        pid = int(path.read_text().strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    if any(arg.endswith(b"jupyterhub") for arg in command) and str(HERE / "jupyterhub_config.py").encode() in command:
        return pid
    path.unlink(missing_ok=True)
    return None


def course_owner():
    import pwd
    return pwd.getpwuid(os.stat(ROOT).st_uid).pw_name


def wait_for(url, seconds, proc=None):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=3) as r:
                if r.status < 500:
                    return True
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.5)
    return False


def start(args):
    require_root()
    sys.dont_write_bytecode = True  # root leaves no __pycache__ of its own in the course folder
    cls = class_dir()
    check_class_dir(cls)
    hub = cls / "hub"
    hub.mkdir(exist_ok=True)
    os.chmod(hub, 0o700)
    url = f"http://127.0.0.1:{args.port}"
    if hub_pid(cls):
        running = json.loads((hub / "settings.json").read_text())["port"]
        say(f"the class's hub is already running at http://127.0.0.1:{running} (make class-stop stops it)")
        return 0
    students = student_names(args.students)
    proxy = ensure_proxy(cls)
    env = ensure_env(cls)
    for name in [INSTRUCTOR, *students]:
        ensure_user(name)
    make_course_private()
    ensure_exchange(cls)
    write_user_config(cls)
    sys.path.insert(0, str(ROOT))
    from autograder.course import chosen
    try:
        release_lessons(cls, chosen([args.lessons] if args.lessons else None))
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    table = passwords(cls, students)
    owner_dir = cls / "formgrader"  # the formgrader's own Jupyter configuration, its runner's
    owner_dir.mkdir(exist_ok=True)
    import pwd
    owner = pwd.getpwnam(course_owner())
    os.chown(owner_dir, owner.pw_uid, owner.pw_gid)
    os.chmod(owner_dir, 0o700)
    settings = {"class_dir": str(cls), "course_root": str(ROOT), "port": args.port, "hub_port": args.port + 1,
                "proxy_api_port": args.port + 2, "service_port": args.port + 3, "proxy": str(proxy),
                "env": str(env), "users": [INSTRUCTOR, *students], "instructor": INSTRUCTOR,
                "course_owner": course_owner(), "course_id": COURSE_ID}
    (hub / "settings.json").write_text(json.dumps(settings, indent=1))
    log = open(hub / "hub.log", "a")
    proc = subprocess.Popen([str(VENV / "bin" / "jupyterhub"), "-f", str(HERE / "jupyterhub_config.py")],
                            cwd=hub, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env={**nbgrader_env(cls), "CLASS_SETTINGS": str(hub / "settings.json")})
    if not wait_for(f"{url}/hub/health", 120, proc):
        proc.terminate()
        raise SystemExit(f"error: the hub did not start; its log is {hub / 'hub.log'}")
    say(f"""
The class's JupyterHub is running at {url}
  instructor  password {table[INSTRUCTOR]}   (the formgrader: {url}/services/{COURSE_ID}/formgrader)
  {', '.join(students)}  password: the user name followed by -encdec (e.g. {students[0]} / {table[students[0]]})
Passwords are in {hub / 'passwords.json'} (root only). State: {cls}. Log: {hub / 'hub.log'}.
Then: make collect, make autograde, make release-feedback, make export; make class-stop stops the hub.""")
    return 0


def stop(args):
    require_root()
    cls = class_dir()
    pid = hub_pid(cls)
    if pid is None:
        say(f"no hub of the class is running (CLASS_DIR={cls})")
        return 0
    os.kill(pid, signal.SIGTERM)  # the hub stops the users' servers, its service and the proxy
    deadline = time.time() + 60
    while time.time() < deadline and hub_pid(cls):
        time.sleep(0.3)
    if hub_pid(cls):
        os.killpg(pid, signal.SIGKILL)
    settings = json.loads((cls / "hub" / "settings.json").read_text())
    left = []
    for name in settings["users"]:  # a kernel a user left running dies with the class
        if subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True).returncode == 0:
            left.append(name)
    for pidfile in ("jupyterhub.pid", "proxy.pid"):
        (cls / "hub" / pidfile).unlink(missing_ok=True)
    say(f"the class's hub is stopped{' (processes left by ' + ', '.join(left) + ' were ended)' if left else ''}")
    return 0


def positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a number of students, 1 or more, not {text!r}")
    return int(text)


def main(argv):
    p = argparse.ArgumentParser(prog="class_hub.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start")
    s.add_argument("--students", type=positive, default=3)
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--lessons", help="the lessons to release, e.g. 01 or 01-05 (default: all)")
    sub.add_parser("stop")
    args = p.parse_args(argv)
    return start(args) if args.command == "start" else stop(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
