"""Which installed packages moved from a constraints file: `scripts/test.sh --latest` prints it.

    python scripts/lock_diff.py constraints.txt
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            pins[_key(name)] = version.strip()
    return pins


def main(path: str) -> int:
    pins = locked(Path(path))
    installed = {_key(d.metadata["Name"]): d.version for d in metadata.distributions() if d.metadata["Name"]}
    installed.pop("memctx", None)
    moved = [f"  {name}: {pins[name]} -> {version}" for name, version in sorted(installed.items())
             if name in pins and pins[name] != version]
    added = [f"  {name}: not in {path} -> {version}" for name, version in sorted(installed.items()) if name not in pins]
    if not moved and not added:
        print(f"newest versions: the same as {path}")
    else:
        print(f"newest versions: {len(moved) + len(added)} moved from {path}")
        print("\n".join(moved + added))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
