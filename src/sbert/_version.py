"""sbert's version, apart from everything so that any module may read it without importing the package's names."""

__version__ = "0.1.0"
