"""docs/CONFIGURATION.md is generated from Settings: every setting is in it, under its section,
with its description, and the file is what the generator writes now."""

from pathlib import Path

from memctx.config import Settings, reference

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_described_in_a_section():
    page = reference()
    rows = [line for line in page.splitlines() if line.startswith("| `MEMCTX_")]
    assert len(rows) == len(Settings.model_fields)
    for name, info in Settings.model_fields.items():
        assert info.description, f"{name} has no description"
        assert sum(row.startswith(f"| `MEMCTX_{name.upper()}` |") for row in rows) == 1, name
    assert page.index("## Database") < page.index("`MEMCTX_DATABASE_URL`") < page.index("## Embeddings")


def test_the_page_is_the_generated_one():
    committed = (ROOT / "docs" / "CONFIGURATION.md").read_text()
    assert committed == reference() + "\n", "run: python scripts/config_doc.py"
