"""Context assembly: get_working_context and the WorkingContext it returns."""

from memctx.assemble.budget import BudgetTooSmall, messages_tokens
from memctx.assemble.context import (ContextAssembler, ContextOptions, ExternalResult, ExternalSearch,
                                     NoExternalSearch, assembler_for, get_working_context)
from memctx.assemble.types import Cut, SectionReport, Source, WorkingContext

__all__ = ["BudgetTooSmall", "ContextAssembler", "ContextOptions", "Cut", "ExternalResult", "ExternalSearch",
           "NoExternalSearch", "SectionReport", "Source", "WorkingContext", "assembler_for", "get_working_context",
           "messages_tokens"]
