"""What `tcplab drill` can run scripts on, and how long one script may take: a module of its own so
that the command line can name them without loading the runner."""

TARGETS = ("kernel", "linux", "freebsd", "freebsd-rack", "rfc")
MODEL_TARGETS = ("linux", "freebsd", "freebsd-rack", "rfc")
DEFAULT_TIMEOUT_S = 120.0
