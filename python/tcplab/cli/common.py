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
from ..outdir import guard
from ..paths import UnsafePath

# Help texts are plain text: "[peers]" and "[sweep]" name spec tables, they are not Rich markup.
app = typer.Typer(help="tcplab: a laboratory for TCP congestion control.", no_args_is_help=True, add_completion=False,
                  rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]})
# Piped output (logs, CI) gets a wide console so tables are not truncated at 80 columns. What is
# printed is literal: names, paths and messages quote user text, where "[x]" is not markup and
# "FILE:100:" is a line number, not an emoji (markup=True only with escape(), below).
out_console = Console(highlight=False, markup=False, emoji=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False, markup=False, emoji=False)
#: Exit status of an interrupted command: 128 + SIGINT, as a shell reports it (and `sweep` did).
INTERRUPTED = 130


def _fail(message: str, code: int = 2) -> None:
    # Escaped: messages quote spec text, and "[sweep ...]" or "[senders.s1]" are not markup.
    err_console.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
    raise typer.Exit(code)


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
            if isinstance(e, UnsafePath) or not isinstance(e, (KeyError, ValueError, TypeError, IndexError, OSError)) \
                    and "duckdb" not in type(e).__module__:
                raise  # an --out refused (_literal_errors says so), or a bug
            # The folders read (not an --out being written), and the error's own file if it has one.
            given = [(k, x) for k, v in [*enumerate(args), *kwargs.items()] for x in (v if isinstance(v, list) else [v])]
            folders = ", ".join(str(v) for k, v in given if isinstance(v, Path) and k != "out")
            if isinstance(e, OSError) and e.filename:
                _fail(f"{e.filename}: {e.strerror or type(e).__name__}")
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            _fail(f"damaged or incomplete results in {folders}: {type(e).__name__}: {first}")

    return wrapper


def _check_target(target: Path, force: bool, kind: str = "run", inputs: tuple = (), resume: bool = False,
                  lock: bool = True) -> None:
    """Before any work: the output is new (or an empty folder), or --force and it is tcplab's own
    `kind`; locked against a second writer until the command ends (outdir.guard)."""
    try:
        _, claim = guard(target, force=force, kind=kind, inputs=inputs, resume=resume, lock=lock)
    except UnsafePath as e:
        _fail(str(e))
    if claim is not None:
        _claims.append(claim)  # released when the command ends (_literal_errors)


#: The --out locks the running command holds.
_claims: list = []


def _literal_errors(command):
    """Every command: an interrupt (Ctrl-C, SIGTERM) exits INTERRUPTED in one line; an --out
    refused late (outdir.OutDirError: another writer took it meanwhile) exits 2 in one line; the
    --out locks it took are released."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        held = len(_claims)
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            _fail("interrupted", INTERRUPTED)
        except UnsafePath as e:
            _fail(str(e))
        finally:
            while len(_claims) > held:
                _claims.pop().release()

    return wrapper


def _warn(warnings: list[str]) -> None:
    """Legal but suspicious spec values (spec/warnings.py), each printed once."""
    for w in dict.fromkeys(warnings):
        err_console.print(f"[bold yellow]warning:[/] {escape(w)}", markup=True, soft_wrap=True)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
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
