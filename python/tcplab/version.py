"""tcplab's version (one place: the package, meta.json and `tcplab version` read it)."""

__version__ = "0.1.0"
