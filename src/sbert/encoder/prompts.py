"""Moved to :mod:`sbert.model.prompts` (every model kind has prompts); this path is kept for existing imports."""

from sbert.model.prompts import DOCUMENT_PROMPT_NAMES, PromptMethods, Prompts

__all__ = ["DOCUMENT_PROMPT_NAMES", "PromptMethods", "Prompts"]
