"""`python -m tcplab.cli`: the `tcplab` command."""

from . import main

main()
