"""Errors sbert raises, so that callers can catch them apart from library bugs."""


class ModelLoadError(OSError):
    """A model could not be found, downloaded or read; the message names the file or the model."""
