"""A script's verdict on one target, as `tcplab drill --json` writes it."""

from __future__ import annotations

from dataclasses import asdict, dataclass

RESULTS = ("pass", "fail", "unsupported")


@dataclass(frozen=True)
class Result:
    """`script` is the path as given; `line` the first failing or unsupported line (None when it
    concerns the whole script); `reason` what differed or what is missing (a pass may carry a note)."""

    script: str
    target: str
    result: str
    line: int | None
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)
