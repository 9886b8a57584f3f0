"""`python -m tcplab.linkem ARGS`: the netns backend's link emulator (crates/tcplab-linkem),
carried inside the native module so an installed wheel needs no separate binary."""

import sys

from . import _native


def main() -> None:
    """Run the emulator with this process's arguments; exit with its status."""
    sys.exit(_native.linkem_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
