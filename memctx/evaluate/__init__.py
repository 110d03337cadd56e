"""Evaluation of get_working_context on LoCoMo (no LLM): recall, containment, tokens, latency."""
