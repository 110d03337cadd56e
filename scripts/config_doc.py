"""Write docs/CONFIGURATION.md from memctx.config.Settings (its sections, defaults and descriptions).

    python scripts/config_doc.py          # after adding or changing a setting
"""

from pathlib import Path

from memctx.config import reference

if __name__ == "__main__":
    target = Path(__file__).resolve().parents[1] / "docs" / "CONFIGURATION.md"
    target.write_text(reference() + "\n")
    print(f"wrote {target}")
