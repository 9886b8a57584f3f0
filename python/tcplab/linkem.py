"""`python -m tcplab.linkem ARGS`: the netns backend's link emulator (crates/tcplab-linkem),
carried inside the native module so an installed wheel needs no separate binary."""

import sys

from ._native import linkem_main


def main() -> None:
    """Run the emulator with this process's arguments; exit with its status."""
    sys.exit(linkem_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
