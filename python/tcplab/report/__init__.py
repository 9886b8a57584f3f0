"""Reports of a finished run: iperf3-style text, charts, and a self-contained report.html."""
