"""The model: SentenceEncoder, its prompts, its output, its router and its on-disk format."""
