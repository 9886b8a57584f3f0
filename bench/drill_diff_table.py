"""The tables of docs/fidelity.md's differential-testing section from a `tcplab drill --generate`
folder: agreement per category (writes split by Nagle on/off), and the disagreements grouped by
category and kind of divergence with a count, the first case, its minimised script's length and
its kernel check. Usage: .venv/bin/python bench/drill_diff_table.py DIR [TARGET]"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from tcplab.drill.generate import CATEGORIES, Scenario
from tcplab.drill.minimise import kind


def main(folder: Path, target: str = "linux") -> None:
    body = json.loads((folder / "drill-diff.json").read_text())
    cases = body["cases"]
    nagle = {c["name"]: not Scenario.from_text((folder / "scenarios" / f"{c['name']}.json").read_text()).nodelay
             for c in cases}
    groups: dict[str, list[dict]] = {}
    for c in cases:
        key = c["category"] + (" (Nagle on)" if nagle[c["name"]] else " (TCP_NODELAY)" if c["category"] == "writes" else "")
        groups.setdefault(key, []).append(c)
    print("| category | scenarios | recorded | agree | disagree | unsupported | agreement |")
    print("|---|---|---|---|---|---|---|")
    order = sorted(groups, key=lambda k: (CATEGORIES.index(k.split()[0]), k))
    for key in [*order, "all"]:
        rows = cases if key == "all" else groups[key]
        res = Counter(r["result"] for c in rows for r in c["results"] if r["target"] == target)
        done = res["pass"] + res["fail"]
        rate = f"{100 * res['pass'] / done:.1f} %" if done else "-"
        rec = sum(c["recorded"] == "yes" for c in rows)
        print(f"| {key} | {len(rows)} | {rec} | {res['pass']} | {res['fail']} | {res['unsupported']} | {rate} |")
    print()
    kinds: Counter = Counter()
    first: dict = {}
    for c in cases:
        for r in c["results"]:
            if r["target"] == target and r["result"] != "pass":
                k = (c["category"], kind(r["reason"]))
                kinds[k] += 1
                first.setdefault(k, (c, r))
    print("| category | first divergence | cases | first case (line: reason) | minimised (lines, kernel) |")
    print("|---|---|---|---|---|")
    for k, n in sorted(kinds.items(), key=lambda kv: (CATEGORIES.index(kv[0][0]), -kv[1])):
        c, r = first[k]
        small = f"{c['minimised_lines']}, {c['minimised_on_kernel'] or 'not checked'}" if c["minimised"] else "-"
        print(f"| {k[0]} | {k[1]} | {n} | {c['name']} ({r['line']}: {r['reason'][:140]}) | {small} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]), *sys.argv[2:3])
