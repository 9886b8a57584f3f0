"""What every `tcplab` command shares: the application, the consoles, one-line errors (exit 2),
warnings, the progress bar, the checks of a results folder and of a backend."""

from __future__ import annotations

import functools
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..backends import NAMES, Backend, Refused, create
from .. import options
from ..options import OptionError
from ..paths import UnsafePath, replaceable

# Help texts are plain text: "[peers]" and "[sweep]" name spec tables, they are not Rich markup.
app = typer.Typer(help="tcplab: a laboratory for TCP congestion control.", no_args_is_help=True, add_completion=False,
                  rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]})
# Piped output (logs, CI) gets a wide console so tables are not truncated at 80 columns.
out_console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False)


def _fail(message: str) -> None:
    # Escaped: messages quote spec text, and "[sweep ...]" or "[senders.s1]" are not markup.
    err_console.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
    raise typer.Exit(2)


def _option(check, *args):
    """An argument through its check in options.py (shared with the Python API); its one line on failure."""
    try:
        return check(*args)
    except OptionError as e:
        _fail(str(e))


def _reads_results(command):
    """For commands that read results folders: a folder damaged after it was written (a table
    truncated or deleted, summary.json edited) fails with one line naming the file, exit 2."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from ..store import DamagedResults  # loaded on use: `tcplab --help` starts without pyarrow

        try:
            return command(*args, **kwargs)
        except DamagedResults as e:
            _fail(f"damaged results: {e}")
        except Exception as e:  # noqa: BLE001 - narrowed just below
            # DuckDB (query, ls) and pandas report a truncated table or a missing column as these.
            if not isinstance(e, (KeyError, ValueError, TypeError, IndexError, OSError)) \
                    and "duckdb" not in type(e).__module__:
                raise
            folders = ", ".join(str(v) for v in [*args, *kwargs.values()] if isinstance(v, Path))
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            _fail(f"damaged or incomplete results in {folders}: {type(e).__name__}: {first}")

    return wrapper


def _check_target(target: Path, force: bool) -> None:
    """Before any work: the results folder is new, or --force and it is tcplab's own results."""
    if target.exists() and not force:
        _fail(f"{target} already exists (choose another --out or pass --force)")
    try:
        replaceable(target)
    except UnsafePath as e:
        _fail(str(e))


def _warn(warnings: list[str]) -> None:
    """Legal but suspicious spec values (spec/warnings.py), each printed once."""
    for w in dict.fromkeys(warnings):
        err_console.print(f"[bold yellow]warning:[/] {escape(w)}", markup=True, soft_wrap=True)


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(),
        TextColumn("{task.fields[sim]:>8} sim"), TimeElapsedColumn(), TimeRemainingColumn(),
        console=err_console, transient=True,
    )


def _command() -> str:
    return shlex.join(["tcplab", *sys.argv[1:]])


def _backend(name: str, testbed: Optional[Path]) -> Backend:
    """The backend named on the command line, with its options (--testbed goes with remote only)."""
    _option(options.backend, name, NAMES)
    try:
        return create(name, testbed)
    except Refused as e:
        _fail(str(e))


def _check_backend(backend: Backend, experiments: list) -> None:
    """Refuse early, before any output or connection, what the backend cannot run."""
    try:
        backend.check(experiments)
    except Refused as e:
        _fail(str(e))


def _backend_failed(backend: Backend, e: BaseException) -> None:
    """A backend's own failure as its lines (and a note after them), exit 2."""
    lines, note = backend.explain(e)
    for line in lines:
        err_console.print(f"[bold red]error:[/] {escape(line)}", markup=True, soft_wrap=True)
    if note:
        err_console.print(note, markup=False)
    raise typer.Exit(2)
