"""The kernel target: each script alone in a fresh network namespace, in a child process of its
own (`python -m tcplab.drill.kernel SCRIPT` is that child). The namespace belongs to the child and
vanishes with it, whatever ends it; the parent kills the child on Ctrl-C, SIGTERM or a timeout and
restores the host-wide files a script may write (tcp_cubic's module parameters)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from . import netdev
from .calls import HANDLED
from .engine import Engine, Failed, Unsupported, helper_paths
from .parse import parse_file
from .result import Result
from .syntax import Script, Shell, Syscall

#: Host-wide files scripts write (echo 3 > .../hystart_detect): saved before, restored after.
HOST_PARAMS = Path("/sys/module/tcp_cubic/parameters")
#: The options this target follows (debug output options change no verdict); others are unsupported.
HONOURED = {"ip_version", "tolerance_usecs", "tolerance_percent", "mtu", "mss", "strict_segments", "debug", "verbose"}
_CC = re.compile(r"tcp_congestion_control\s*=\s*\"?(\w+)")
_FREEBSD = re.compile(r"\bsysctl\s+(?:-\w+\s+)*net\.inet\.|\bkern\.ipc\.")


def static_problems(script: Script) -> tuple[int | None, str] | None:
    """What makes `script` unrunnable here, found before running it: (line, reason) or None."""
    if script.ip_version() != "ipv4":
        return None, f"--ip_version={script.ip_version()}: the kernel target runs IPv4 scripts only"
    for opt in script.options:
        if opt not in HONOURED:
            return None, f"--{opt} is not supported by the kernel target"
    if script.unsupported:
        return script.unsupported[0]
    for cmd_line, cmd in _commands(script):
        if _FREEBSD.search(cmd):
            return cmd_line, "FreeBSD sysctl (net.inet.*, kern.ipc.*): no such setting on Linux"
    for ev in script.events:
        b = ev.body
        if isinstance(b, Syscall) and b.name not in HANDLED:
            return ev.line, f"system call {b.name}() is not supported by the kernel target"
    return None


def _commands(script: Script) -> list[tuple[int, str]]:
    out = [(script.init_line, script.init.command)] if script.init else []
    out += [(e.line, e.body.command) for e in script.events if isinstance(e.body, Shell)]
    return out


def wanted_congestion(script: Script) -> str | None:
    """The congestion control the script's commands (and the .sh files they run) set by sysctl."""
    folder = Path(script.path).resolve().parent
    found = None
    for _, cmd in _commands(script):
        texts = [cmd] + [_read(Path(m) if m.startswith("/") else folder / m)
                         for m in re.findall(r"[\w./-]+\.sh\b", helper_paths(cmd, folder, []))]
        for t in texts:
            for m in _CC.finditer(t):
                found = m.group(1)
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return ""


def _save_host_params() -> dict[Path, str]:
    if not HOST_PARAMS.is_dir():
        return {}
    return {p: p.read_text() for p in HOST_PARAMS.iterdir() if p.is_file() and os.access(p, os.W_OK)}


def _restore_host_params(saved: dict[Path, str]) -> None:
    for p, v in saved.items():
        try:
            if p.read_text() != v:
                p.write_text(v)
        except OSError:
            pass


def run_script(path: str, script: Script, timeout_s: float) -> Result:
    """Run one script in a child process in a new namespace; always leaves the host as it was."""
    problem = static_problems(script)
    if problem:
        return Result(path, "kernel", "unsupported", problem[0], problem[1])
    if os.geteuid() != 0:
        return Result(path, "kernel", "unsupported", None, "the kernel target needs root (network namespaces, TUN)")
    saved = _save_host_params()
    old_term = signal.signal(signal.SIGTERM, _raise_interrupt) if _main_thread() else None
    child = None
    try:
        with signals_held():
            child = spawn([sys.executable, "-m", "tcplab.drill.kernel", path])
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill(child)
        return Result(path, "kernel", "fail", None, f"did not finish within {timeout_s:g} s")
    except BaseException:
        if child is not None:
            _kill(child)
        raise
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
        _restore_host_params(saved)
        if child is not None:
            _remove_restore_file(child.pid)
    return _child_result(path, out, err, child.returncode)


#: The signals that stop a run (Ctrl-C, SIGTERM).
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def signals_held():
    """The stop signals held back for the block (the main thread only): start a child in it and
    keep its handle, and a Ctrl-C cannot fall in between and leave the child running and the host
    unrestored. Delivered as the block ends; the child lets them through again (unhold())."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS) if _main_thread() else None
    try:
        yield
    finally:
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def unhold() -> None:
    """In a child started under signals_held(): the stop signals reach it again."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def spawn(args: list[str]) -> subprocess.Popen:
    """A child in a session of its own: it, its namespace and any command it runs are killed as one group."""
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _raise_interrupt(signum, frame):  # noqa: ANN001 - a signal handler
    raise KeyboardInterrupt(f"signal {signum}")


#: How long a stopped run waits for its killed child to be gone. A killed process closing its TUN
#: device needs the RTNL lock (tun_chr_close() -> tun_detach()), which the kernel's cleanup of
#: dying namespaces can hold for seconds; the run stops anyway, the kernel finishes the exit.
KILLED_CHILD_WAIT_S = 5.0


def _kill(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        child.wait(timeout=KILLED_CHILD_WAIT_S)
    except subprocess.TimeoutExpired:
        pass


def _child_result(path: str, out: str, err: str, code: int) -> Result:
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            d = json.loads(line)
            return Result(path, "kernel", d["result"], d["line"], d["reason"])
    last = (err.strip().splitlines() or [f"exit status {code}"])[-1]
    return Result(path, "kernel", "fail", None, f"runner crashed: {last}")


def _child(path: str) -> dict:
    """In the child: new namespace, TUN, the script; a result dict."""
    script = parse_file(path)
    try:
        netdev.enter_new_netns()
        netdev.realtime()
        tun = netdev.Tun(int(script.options["mtu"]) if "mtu" in script.options else None)
        cc, note = _congestion(script)
        engine = Engine(script, tun, cc)
        if script.init:
            engine._shell(script.init_line, script.init.command)
            cc, note = _congestion(script)
            engine.congestion = cc
        engine.run()
    except Unsupported as e:
        return {"result": "unsupported", "line": e.line, "reason": e.reason}
    except Failed as e:
        return {"result": "fail", "line": e.line, "reason": e.reason}
    except netdev.NetdevError as e:
        return {"result": "unsupported", "line": None, "reason": str(e)}
    finally:
        _remove_restore_file(os.getpid())
    return {"result": "pass", "line": None, "reason": "; ".join([n for n in [note] if n] + engine.notes)}


def _congestion(script: Script) -> tuple[str | None, str]:
    """(congestion control to set per socket, note): what the script asked by sysctl when this
    namespace runs something else (the host's tcp_allowed_congestion_control forbids it)."""
    want = wanted_congestion(script)
    now = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    if want is None or want == now:
        return None, ""
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    if want not in avail:
        raise Unsupported(None, f"the script asks for congestion control {want!r}; this kernel has {' '.join(avail)}")
    return want, f"{want} set per socket (TCP_CONGESTION): the namespace's default is {now}"


def _remove_restore_file(pid: int) -> None:
    """set_sysctls.py leaves /tmp/sysctl_restore_<runner pid>.sh; with the namespace gone it has no use."""
    try:
        os.unlink(f"/tmp/sysctl_restore_{pid}.sh")
    except OSError:
        pass


if __name__ == "__main__":
    unhold()
    sys.setswitchinterval(1e-4)  # a blocking call's thread sees its return promptly (default 5 ms)
    print(json.dumps(_child(sys.argv[1])), flush=True)
