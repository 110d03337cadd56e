"""The learning layer: what memctx learns about its users from what they say (a profile of
sourced items), from agents' tool calls (procedures), and from the ratings callers give.

Pure rules (extract, merge, topics, patterns) and the profile's reader for contexts (recall);
the pipeline (memctx/pipeline/learning.py, profile.py) applies them to the database, retrieval
and assembly read them, and no door imports this package (docs/LEARNING.md)."""
