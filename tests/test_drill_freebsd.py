"""The FreeBSD expectation scripts in tests/drill/freebsd (issue 33's modelled rules) parse, cite their
source, and run through `tcplab drill` on their stack targets (unsupported until the model targets exist)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tcplab.drill import parse_file

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "tests" / "drill" / "freebsd").glob("*.pkt"))


def _target(script: Path) -> str:
    return "freebsd-rack" if script.name.startswith("rack-") else "freebsd"


def test_there_are_scripts_and_each_parses_with_a_cited_commit():
    assert SCRIPTS
    for path in SCRIPTS:
        script = parse_file(path)
        assert script.events, path
        assert not script.unsupported, (path, script.unsupported)
        text = path.read_text()
        # Each names the file and the 40-digit commit its expectation comes from.
        assert "sys/netinet/" in text and any(len(w.strip(",:")) == 40 for w in text.split()), path


def test_the_cli_runs_each_on_its_target_without_a_parse_error(tmp_path):
    for path in SCRIPTS:
        out = tmp_path / f"{path.stem}.json"
        r = subprocess.run([sys.executable, "-m", "tcplab.cli", "drill", str(path), "--target", _target(path),
                            "--json", str(out)], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, (path, r.stdout, r.stderr)
        [res] = json.loads(out.read_text())
        assert res["target"] == _target(path)
        assert res["result"] in ("pass", "unsupported"), res
