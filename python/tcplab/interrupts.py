"""SIGTERM handled as Ctrl-C: the same KeyboardInterrupt, so every writer's cleanup (a partial
folder removed, a remote host restored) runs and the command exits 130, as a shell reports an
interrupted program (128 + SIGINT)."""

from __future__ import annotations

import signal
import threading


def _on_sigterm(signum, frame) -> None:
    raise KeyboardInterrupt


def raise_on_sigterm() -> None:
    """Make SIGTERM raise KeyboardInterrupt in the main thread (from now on); commands that
    install their own handler for a while (a sweep, the kernel backends) put this one back."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
