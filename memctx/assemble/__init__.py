"""Context assembly: get_working_context and the WorkingContext it returns."""

from memctx.assemble.asked import asked_at
from memctx.assemble.budget import BudgetTooSmall
from memctx.assemble.context import (ContextAssembler, ContextOptions, ExternalSearch, assembler_for,
                                     get_working_context)
from memctx.assemble.types import Cut, SectionReport, Source, WorkingContext

__all__ = ["BudgetTooSmall", "ContextAssembler", "ContextOptions", "Cut", "ExternalSearch", "SectionReport", "Source",
           "WorkingContext", "asked_at", "assembler_for", "get_working_context"]
