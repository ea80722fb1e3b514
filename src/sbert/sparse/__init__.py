"""Sparse encoders (SPLADE): a sentence becomes a weight per vocabulary word, searched by dot product."""
