"""The `tcplab` command. Its commands by domain: running experiments (runs.py: run, peers, sweep),
reading results (results.py: presets, show, recovery, compare, plot, ls, query, stats), a testbed's
logs (logs.py: import, export), machines (machines.py: netns cleanup, remote restore, doctor,
version), packetdrill scripts (drill.py: drill); what they share in common.py. Each only parses
arguments, shows progress and prints: the work is done by tcplab's API. Registered here, in the order `tcplab --help` lists them."""

from __future__ import annotations

from ..interrupts import raise_on_sigterm
from . import calibrate, drill, logs, machines, results, runs
from .common import _literal_errors, app

__all__ = ["app", "main"]

app.command()(runs.run)
app.command()(runs.peers)
app.command()(results.presets)
app.command()(results.show)
app.command()(results.recovery)
app.command()(results.compare)
app.command()(results.plot)
app.command('import')(logs.import_)
app.command()(logs.export)
app.command()(runs.sweep)
app.command()(calibrate.calibrate)
app.command('ls')(results.ls_)
app.command()(results.query)
app.command()(results.stats)
app.add_typer(machines.netns_app, name='netns')
app.add_typer(machines.remote_app, name='remote')
app.command()(machines.doctor)
app.command()(machines.version)
app.command()(drill.drill)


# Every command: interrupts exit 130 in one line, an --out refused late in one line, --out locks released.
for _command_info in [*app.registered_commands, *machines.netns_app.registered_commands,
                      *machines.remote_app.registered_commands]:
    _command_info.callback = _literal_errors(_command_info.callback)


def main() -> None:
    raise_on_sigterm()
    app()
