"""The one guard of every folder or file a command writes (--out): checked before any work, locked
against a second writer, replaced only when it is tcplab's own, and the leftovers of killed
writers swept from its parent.

A writer holds `.<name>.lock` beside its target (flock, so a killed writer's lock is free again)
from the check until its result is in place; store.RunDir writes under `.<name>.partial-<pid>`.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from .paths import UnsafePath

#: Linux NAME_MAX is 255 bytes; a writer adds ".<name>.partial-<pid>" (pid up to 7 digits).
NAME_MAX_BYTES = 255 - len("..partial-") - 7
#: Linux PATH_MAX (4096) less the same room.
PATH_MAX_BYTES = 4096 - 32
CHART_SUFFIXES = (".png", ".svg", ".pdf")
#: Kinds whose output is one file, and the suffixes it may have: a chart (`tcplab plot`), the
#: results of `tcplab drill --json`.
FILE_KINDS = {"chart": CHART_SUFFIXES, "drill": (".json",)}
#: The option that names a kind's output where it is not --out.
OPTIONS = {"drill": "--json"}
_EXPORT_FILE = re.compile(r"siftr2\.log|tcp_probe\.txt|iperf3-\d+\.json")
#: A killed writer's folder (or chart: .STEM.partial-PID.png, which keeps the suffix matplotlib reads).
_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?P<what>partial|old)-(?P<pid>\d+)(?P<suffix>\.png|\.svg|\.pdf|\.json)?")


class OutDirError(UnsafePath):
    """tcplab will not write this --out; the message names it and says why (one line)."""


#: Files that mark a folder as a kind's own: a run (run, peers, import: a run, its iterations, a
#: peer compare) and a sweep (whose lock is inside its folder, taken before sweep.json is written).
MARKERS = {"run": {"meta.json", "summary.json", "iterations.json", "peers.json"}, "sweep": {"sweep.json", ".lock"}}


def _is_kind(path: Path, kind: str) -> bool:
    """Whether the existing folder (file for "chart") is what a command of `kind` writes. A kind
    without markers of its own (compare; a new command's) is marked by `<kind>.json`."""
    if kind == "chart":  # charts carry no mark of their own (their metadata is left out: deterministic)
        return path.is_file() and path.suffix.lower() in CHART_SUFFIXES
    if kind == "drill":  # a list of {"script", "target", "result", ...}, as `tcplab drill --json` writes
        return path.is_file() and path.suffix.lower() == ".json" and _is_drill_json(path)
    names = {p.name for p in path.iterdir()} if path.is_dir() else set()
    if kind == "export":
        return bool(names) and all(_EXPORT_FILE.fullmatch(n) for n in names)
    if kind == "plots":
        return bool(names) and all(_is_kind(path / n, "chart") for n in names)
    return bool(names & MARKERS.get(kind, {f"{kind}.json"}))


def _is_drill_json(path: Path) -> bool:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(rows, list) and all(isinstance(r, dict) and {"script", "target", "result"} <= r.keys()
                                          for r in rows)


_WHAT = {"run": "results folder", "sweep": "sweep folder", "compare": "compare folder", "export": "export folder",
         "plots": "folder of charts", "chart": "chart (.png, .svg, .pdf)", "drill": "drill --json file"}


def _what(kind: str) -> str:
    return _WHAT.get(kind, f"{kind} folder")


def _option(kind: str) -> str:
    return OPTIONS.get(kind, "--out")


def resolve(out: Path, option: str = "--out") -> Path:
    """`out` with symbolic links followed (an existing link is written through, to its target);
    a link to nothing, or a loop, is refused."""
    real = Path(os.path.realpath(out))
    if out.is_symlink() and not real.exists():
        raise OutDirError(f"{out} is a symbolic link to {os.readlink(out)}, which does not exist: "
                          f"choose another {option}")
    return real


def _check_names(out: Path, option: str) -> None:
    """Names the file system can hold, with room for the writer's hidden temporary name."""
    if len(os.fsencode(str(out))) > PATH_MAX_BYTES:
        raise OutDirError(f"{str(out)[:60]}...: {option} is {len(str(out))} characters long; at most {PATH_MAX_BYTES}")
    for part in out.parts:
        if len(os.fsencode(part)) > NAME_MAX_BYTES:
            raise OutDirError(f"{part[:40]}...: a name of {len(part)} characters in {option}; "
                              f"a folder or file name has at most {NAME_MAX_BYTES}")


def _check_parent(out: Path, real: Path) -> None:
    """The nearest existing folder above `real` must be a folder this process can write in."""
    up = real.parent
    while not up.exists() and up != up.parent:
        if up.is_symlink():
            raise OutDirError(f"cannot write {out}: {up} is a symbolic link to nothing")
        up = up.parent
    if not up.is_dir():
        raise OutDirError(f"cannot write {out}: {up} is a file, not a folder")
    if not os.access(up, os.W_OK | os.X_OK):
        raise OutDirError(f"cannot write {out}: no permission to write in {up}")


def check(out: str | Path, *, force: bool, kind: str = "run", inputs: Iterable[str | Path] = (),
          resume: bool = False) -> Path:
    """The place to write for `--out out` (symbolic links followed), or OutDirError: an existing
    non-empty folder (or file) without `force`; with `force`, anything but a `kind` folder; a
    folder that is or holds one of the command's `inputs`; a name too long; a parent that is a
    file, missing or not writable. `resume`: an existing `kind` folder is carried on (a sweep)."""
    if not str(out).strip():
        raise OutDirError(f"{_option(kind)}: an empty path")
    out = Path(out)
    _check_names(out, _option(kind))
    try:
        return _check(out, force, kind, inputs, resume)
    except OSError as e:  # a folder on the way that cannot be read (permissions, an I/O error)
        raise OutDirError(f"cannot write {out}: {e.strerror or e} ({e.filename or out})") from None


def _check(out: Path, force: bool, kind: str, inputs: Iterable[str | Path], resume: bool) -> Path:
    option = _option(kind)
    real = resolve(out, option)
    for i in inputs:
        r = Path(os.path.realpath(i))
        if r == real or real in r.parents:
            raise OutDirError(f"{out} is (or holds) {i}, an input of this command: choose another {option}")
    if real.exists() or real.is_symlink():
        file_kind = kind in FILE_KINDS
        if file_kind and kind != "chart" and real.is_dir():
            raise OutDirError(f"{out} is a folder: {option} names a file")
        if file_kind and real.is_dir():
            raise OutDirError(f"{out} is a folder; give a file name ending in {', '.join(CHART_SUFFIXES)}, or a folder "
                              "without a chart suffix")
        if not file_kind and not real.is_dir():
            raise OutDirError(f"{out} is a file, not a folder: choose another {option}")
        empty = not file_kind and not any(real.iterdir())
        own = _is_kind(real, kind)
        if not empty and not (resume and own):
            if resume:
                raise OutDirError(f"{out} exists and is not a {_what(kind)}: choose another {option}")
            if not force:
                raise OutDirError(f"{out} already exists (choose another {option} or pass --force)")
            if not own:
                raise OutDirError(f"{out} is not a tcplab {_what(kind)}; --force replaces only those: "
                                  f"choose another {option}")
    _check_parent(out, real)
    return real


class Claim:
    """The lock `.<name>.lock` beside a target, held by this process (re-entrant: the CLI claims
    before any work, the writer again when it starts)."""

    _held: dict[Path, "Claim"] = {}

    def __init__(self, real: Path, option: str = "--out"):
        self.real, self.path, self.count, self.fd = real, real.parent / f".{real.name}.lock", 0, -1
        self.option = option  # named in the refusal

    @classmethod
    def take(cls, real: Path, option: str = "--out") -> "Claim":
        """Lock `real` (its parents made if missing), or OutDirError when another process holds it
        or the folder cannot be written."""
        claim = cls._held.get(real)
        if claim is None:
            claim = cls(real, option)
            claim._lock()
            cls._held[real] = claim
        claim.count += 1
        return claim

    def _lock(self) -> None:
        try:
            self.real.parent.mkdir(parents=True, exist_ok=True)
            while True:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    raise OutDirError(f"{self.real}: another tcplab process is writing it "
                                      f"(it holds {self.path}); wait for it or choose another {self.option}") from None
                # A writer finishing unlinks its lock file: lock the file that is there now.
                if _same_file(fd, self.path):
                    break
                os.close(fd)
        except OSError as e:
            raise OutDirError(f"cannot write {self.real}: {e.strerror or e} ({e.filename or self.real.parent})") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd

    def release(self) -> None:
        """Drop one hold; the last removes the lock file and unlocks."""
        self.count -= 1
        if self.count > 0 or self.fd < 0:
            return
        Claim._held.pop(self.real, None)
        try:
            self.path.unlink()
        except OSError:
            pass
        os.close(self.fd)
        self.fd = -1


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs (signal 0; a process of another user counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, TypeError):  # not a pid (a damaged journal or lock file)
        return False
    return True


def _locked(lock: Path) -> bool:
    """Whether a live process holds `lock` (a killed one's lock is free: flock dies with it)."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _stale_lock(path: Path) -> bool:
    """Remove a lock file Claim wrote (its content a pid) whose writer is gone; whether it did.
    A writer that opened it meanwhile sees it replaced and takes the new one (Claim._lock)."""
    try:
        text = path.read_text()[:16]
    except (OSError, UnicodeDecodeError):
        return False
    if not text.strip().isdigit() or pid_alive(int(text)) or _locked(path):
        return False
    try:
        path.unlink()
    except OSError:
        return False
    return True


def sweep_leftovers(parent: Path) -> list[Path]:
    """Remove what killed writers left in `parent`: their lock files, `.<name>.partial-<pid>` folders, and
    `.<name>.old-<pid>` (the previous results a --force replaced: put back if the new ones never
    arrived), when that pid is gone and nobody holds `<name>`'s lock. Returns what was removed."""
    done = []
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(".")]
    except OSError:
        return done
    for e in entries:
        if e.name.endswith(".lock") and _stale_lock(Path(e.path)):
            done.append(Path(e.path))
            continue
        m = _LEFTOVER.fullmatch(e.name)
        if not m or pid_alive(int(m["pid"])) or _locked(parent / f".{m['name']}{m['suffix'] or ''}.lock"):
            continue
        path, final = Path(e.path), parent / (m["name"] + (m["suffix"] or ""))
        if m["what"] == "old" and not final.exists() and not final.is_symlink():
            try:
                path.rename(final)
                continue
            except OSError:
                pass
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                path.unlink()
            except OSError:
                continue
        done.append(path)
    return done


def guard(out: str | Path, *, force: bool, kind: str = "run", inputs: Iterable[str | Path] = (),
          resume: bool = False, lock: bool = True) -> tuple[Path, Claim | None]:
    """check() then, with `lock`, the claim on the target and the sweep of its parent's leftovers:
    what a command calls before any work. Release the claim when done."""
    real = check(out, force=force, kind=kind, inputs=inputs, resume=resume)
    if not lock:
        return real, None
    claim = Claim.take(real, _option(kind))
    sweep_leftovers(real.parent)
    if kind == "plots" and real.is_dir():  # charts are drawn under hidden names inside it
        sweep_leftovers(real)
    return real, claim

