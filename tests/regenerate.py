"""Regenerate every generated file of the repository, in the order they depend on each other.

    .venv/bin/python tests/regenerate.py              # all of them
    .venv/bin/python tests/regenerate.py --list       # what is generated, by what, and which test checks it
    .venv/bin/python tests/regenerate.py workbooks    # one kind (names as --list prints them)

The table is ``tests/helpers/generated.py``'s GENERATED; ``tests/e2e/test_generated.py`` fails on any committed copy
that is not what this version writes. The screenshots need LibreOffice and poppler. Read the diff before committing.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, run as a script

from tests.helpers.generated import GENERATED, regenerate  # noqa: E402


def main(argv: list[str]) -> int:
    if "--list" in argv:
        for item in GENERATED:
            how = f"xlsxplan {' '.join(item.command)}" if item.command[0] != "python" else " ".join(item.command)
            by = item.checked_by or "tests/e2e/test_generated.py"
            print(f"{item.name}: {', '.join(item.files)}\n  made by: {how}\n  checked by: {by}")
        return 0
    unknown = [a for a in argv if a not in {g.name for g in GENERATED}]
    if unknown:
        print(f"regenerate: unknown name(s) {', '.join(unknown)}; see --list", file=sys.stderr)
        return 2
    return regenerate(argv or None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
