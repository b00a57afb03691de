"""The course files grading relies on: a private snapshot to grade from, a check that restores
whatever a submission changed, and finding which submission changed it."""

import os
import shutil
from pathlib import Path

from .course import HERE, ROOT, SOLUTIONS


def snapshot_course(work):
    """A private copy of what grading runs: lib/ (the kernels import it), solutions/ and the
    autograder's code. Submissions can reach only this copy, which is checked and restored
    after every job; the working tree is never touched, so nobody's edits are undone."""
    course = Path(work) / "course"
    if course.exists():
        shutil.rmtree(course)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "lib", course / "lib", ignore=ignore)
    shutil.copytree(SOLUTIONS, course / "solutions", ignore=ignore)
    (course / "autograder").mkdir()
    for path in HERE.glob("*.py"):
        shutil.copyfile(path, course / "autograder" / path.name)
    return course


def course_hash(course):
    """The hash of a course snapshot (snapshot_course): every file of its lib/, solutions/ (the
    lessons' source notebooks, from which their release is made) and autograder/, by path and bytes,
    and nbgrader's version, which makes the release and grades. Two copies of the course with the
    same hash grade alike; a Dask worker whose copy has another refuses the run's jobs."""
    import hashlib
    from importlib.metadata import version
    digest = hashlib.sha256(f"nbgrader {version('nbgrader')}\n".encode())
    course = Path(course)
    for path in sorted(p for p in course.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f"{path.relative_to(course).as_posix()}\n{path.stat().st_size}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class Integrity:
    """The files grading relies on, remembered before grading and restored if a submission
    changes them: the snapshot of the course (its lib/, solutions/ and autograder code), the
    template gradebook, every submission, and the start-up hooks of the Python environment
    (.pth files, sitecustomize). With watch_site=False (kernels in the sandbox, which shows them the
    Python environment read-only), the environment is left out: a change there cannot come from a
    submission, and no student is blamed for someone installing a package meanwhile."""

    def __init__(self, submitted, template, course, watch_site=True):
        self.roots = [Path(course), Path(template)] + ([Path(submitted)] if submitted else [])
        self.files = {}
        for root in self.roots:
            for path in root.rglob("*"):
                if path.is_file() and "__pycache__" not in path.parts:
                    self.files[path] = path.read_bytes()
        self.stats = {p: self._stat(p) for p in self.files}
        self.watch_site = watch_site
        self.site = self._site_listing() if watch_site else set()

    @staticmethod
    def _stat(path):
        try:
            st = path.stat()
            return (st.st_size, st.st_mtime_ns)
        except OSError:
            return None

    @staticmethod
    def _site_listing():
        import site
        names = set()
        for folder in site.getsitepackages() + [site.getusersitepackages()]:
            if os.path.isdir(folder):
                names |= {os.path.join(folder, n) for n in os.listdir(folder)}
        return names

    def check_and_restore(self):
        """Paths that changed since grading began (now restored); [] when all is intact."""
        changed = []
        for path, data in self.files.items():
            if self._stat(path) != self.stats[path]:
                if not path.exists() or path.read_bytes() != data:
                    changed.append(str(path))
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)
                self.stats[path] = self._stat(path)
        for root in self.roots:
            for path in root.rglob("*"):
                if path.is_file() and path not in self.files and "__pycache__" not in path.parts:
                    changed.append(f"{path} (new)")
                    path.unlink()
        for extra in (self._site_listing() - self.site) if self.watch_site else ():
            changed.append(f"{extra} (new)")
            shutil.rmtree(extra, ignore_errors=True) if os.path.isdir(extra) else os.remove(extra)
        return changed


def tampering_status(changed):
    """The status of a submission that changed files outside its own folder."""
    shown = ", ".join(str(Path(c)) for c in changed[:3])
    return f"tampered: the notebook changed files outside its own folder ({shown}); they were restored"


def find_culprits(suspects, grade, integrity):
    """Grade the suspects again one at a time, so the one that changes files is known exactly.

    suspects: job indices that were in flight when a change was found; grade(i) grades job i.
    Yields (i, what grade(i) returned, the tampering status or None)."""
    for i in sorted(suspects):
        result = grade(i)
        changed = integrity.check_and_restore()
        yield i, result, (tampering_status(changed) if changed else None)
