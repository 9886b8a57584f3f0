"""Commands on a lab machine through the user's own OpenSSH client: ~/.ssh/config (or LAB.toml's
`ssh.config`, passed as -F), ProxyJump, keys and agent are ssh's business, not tcplab's. One
master connection per machine is reused for the whole run (ControlMaster/ControlPersist, see
ssh_config(5)); BatchMode forbids any password prompt, ConnectTimeout bounds an unreachable host.

Every remote command is an argument list joined with shlex.join, run as `sh -c SCRIPT sh ARGS`
so that the remote login shell (csh or sh) only ever sees single-quoted words: no value of the
spec or of LAB.toml reaches a remote shell unquoted. Every call has a timeout.
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import IO

from .lab import Lab, Machine


class RemoteError(Exception):
    """A remote step failed; the message names the host, the step and what to do."""


def _first_line(text: str) -> str:
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


class Ssh:
    """The ssh command line to one machine, with a shared control socket."""

    def __init__(self, lab: Lab, m: Machine, control_dir: Path):
        self.m = m
        self.timeout_s = lab.command_timeout_s
        opts = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={lab.connect_timeout_s}",
                "-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir}/%C", "-o", "ControlPersist=300",
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR"]
        self.base = ["ssh", *(["-F", str(lab.ssh_config)] if lab.ssh_config else []), *opts]

    def argv(self, words: list[str]) -> list[str]:
        """The local command that runs `words` (an argument list) on the machine."""
        words = [str(w) for w in words]
        if self.m.sudo:
            words = ["sudo", "-n", *words]
        return [*self.base, "-T", "--", self.m.ssh, shlex.join(words)]

    def run(self, words: list[str], *, check: bool = True, timeout: float | None = None,
            what: str | None = None) -> subprocess.CompletedProcess:
        """Run `words` remotely; on failure (check) raise RemoteError naming host and step."""
        t = timeout or self.timeout_s
        step = what or shlex.join([str(w) for w in words])[:120]
        try:
            p = subprocess.run(self.argv(words), capture_output=True, text=True, timeout=t, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RemoteError(f"{self.m.node}: `{step}` did not finish in {t:g} s") from None
        except FileNotFoundError:
            raise RemoteError("the ssh client is not installed here (apt-get install openssh-client)") from None
        if p.returncode == 255:
            raise RemoteError(f"{self.m.node}: cannot reach {self.m.ssh} over ssh: {_first_line(p.stderr) or 'ssh exit 255'}")
        if check and p.returncode != 0:
            raise RemoteError(f"{self.m.node}: `{step}` failed (exit {p.returncode}): "
                              f"{_first_line(p.stderr) or _first_line(p.stdout)}")
        return p

    def sh(self, script: str, *args: str, check: bool = True, timeout: float | None = None,
           what: str | None = None) -> subprocess.CompletedProcess:
        """A POSIX sh script with its arguments as "$1".. (never pasted into the script)."""
        return self.run(["sh", "-c", script, "sh", *[str(a) for a in args]], check=check, timeout=timeout,
                        what=what or script.split(";")[0][:60])

    def fetch(self, remote_path: str, out: IO[bytes], *, timeout: float | None = None) -> None:
        """Copy a remote file into `out`, streamed (`cat` over the shared connection)."""
        t = timeout or max(self.timeout_s, 600)
        try:
            p = subprocess.run(self.argv(["cat", remote_path]), stdout=out, stderr=subprocess.PIPE, timeout=t,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RemoteError(f"{self.m.node}: fetching {remote_path} did not finish in {t:g} s") from None
        if p.returncode != 0:
            raise RemoteError(f"{self.m.node}: cannot fetch {remote_path}: {_first_line(p.stderr.decode(errors='replace'))}")

    def stream(self, remote_path: str) -> subprocess.Popen:
        """A remote file's bytes on a pipe (the caller reads, then waits)."""
        return subprocess.Popen(self.argv(["cat", remote_path]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)

    def close(self) -> None:
        """End the master connection (`ssh -O exit`)."""
        subprocess.run([*self.base, "-O", "exit", self.m.ssh], capture_output=True, timeout=10)


def control_dir() -> Path:
    """A private folder for the control sockets: short (a socket path has at most 104 bytes on
    FreeBSD, 108 on Linux) and readable by this user only."""
    return Path(tempfile.mkdtemp(prefix="tcplab-ssh-", dir="/tmp"))


#: Start a detached process: its PID in NAME.pid, output in NAME.out/.err, in the run's folder.
#: nohup and `exec` keep one PID from the shell to the program, which $! then prints.
DETACH = ('cd "$1" || exit 1; n=$2; shift 2; '
          'nohup sh -c \'echo $$ > "$0.pid"; exec "$@" > "$0.out" 2> "$0.err"\' "$n" "$@" '
          '< /dev/null > /dev/null 2>&1 & echo $!')

#: Kill the processes whose PIDs are in the run's *.pid files, if each is still the program that
#: was started (its command name matches): only what tcplab started is touched.
KILL_RUN = ('cd "$1" 2>/dev/null || exit 0; sig=${2:-TERM}; for f in *.pid; do [ -f "$f" ] || continue; '
            'p=$(cat "$f"); c=$(ps -o comm= -p "$p" 2>/dev/null) || continue; '
            'case "$c" in iperf3|cat|tcpdump|*iperf3*) kill -"$sig" "$p" 2>/dev/null;; esac; done; true')
