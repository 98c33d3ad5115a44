"""Run mypy (settings in ``mypy.ini``) and fail on any finding beyond the baseline.

    python tools/mypy_gate.py            # check: exit 1 when a file has more findings than its baseline
    python tools/mypy_gate.py --update   # rewrite .mypy-baseline with today's counts (only lowers them)

``.mypy-baseline`` lists, one line a file, ``path: count``: the findings the file is allowed while
the package is brought to clean. A file not listed is allowed none, so new code is held to zero;
the list only shrinks (``--update`` never raises a count nor adds a file). A file whose count fell
below its baseline is named so that the baseline can be lowered.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / ".mypy-baseline"
FINDING = re.compile(r"^(?P<path>[^:\s]+\.pyi?):\d+(?::\d+)?: error: ")


def read_baseline(path: Path = BASELINE) -> dict[str, int]:
    """The allowed findings per file (``path: count`` lines; ``#`` comments and blank lines skipped)."""
    allowed: dict[str, int] = {}
    if not path.exists():
        return allowed
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, count = line.rpartition(":")
            allowed[name.strip()] = int(count)
    return allowed


def count_findings(mypy_output: str) -> Counter[str]:
    """The number of ``error:`` lines per file in mypy's output (notes are not findings)."""
    return Counter(m["path"] for m in map(FINDING.match, mypy_output.splitlines()) if m)


def over_baseline(found: Counter[str], allowed: dict[str, int]) -> dict[str, tuple[int, int]]:
    """The files with more findings than allowed: ``path -> (found, allowed)``."""
    return {p: (n, allowed.get(p, 0)) for p, n in sorted(found.items()) if n > allowed.get(p, 0)}


def lowered(found: Counter[str], allowed: dict[str, int]) -> dict[str, int]:
    """The baseline with each count lowered to what was found (files now clean are dropped)."""
    return {p: min(n, found.get(p, 0)) for p, n in sorted(allowed.items()) if found.get(p, 0) > 0}


def main(argv: list[str]) -> int:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "mypy.ini")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    found = count_findings(run.stdout)
    if run.returncode not in (0, 1) or (run.returncode == 1 and not found):
        sys.stderr.write(run.stdout + run.stderr)
        print("mypy: did not run to the end", file=sys.stderr)
        return 2
    allowed = read_baseline()
    if "--update" in argv:
        new = lowered(found, allowed)
        header = "# mypy findings allowed per file while the package is brought to clean (tools/mypy_gate.py)\n"
        BASELINE.write_text(header + "".join(f"{p}: {n}\n" for p, n in new.items()))
        print(f"mypy: baseline {sum(allowed.values())} -> {sum(new.values())} findings in {len(new)} files")
        return 0
    over = over_baseline(found, allowed)
    for path, (n, cap) in over.items():
        print(f"mypy: {path}: {n} findings, {cap} allowed by .mypy-baseline:", file=sys.stderr)
        for line in run.stdout.splitlines():
            if line.startswith(path + ":"):
                print("  " + line, file=sys.stderr)
    fewer = [p for p, cap in allowed.items() if found.get(p, 0) < cap]
    print(
        f"mypy: {sum(found.values())} findings in {len(found)} files, baseline {sum(allowed.values())};"
        f" {len(over)} files over it"
        + (f"; {len(fewer)} below it (lower it: tools/mypy_gate.py --update)" if fewer else "")
    )
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
