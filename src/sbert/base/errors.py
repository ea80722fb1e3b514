"""Errors sbert raises, so that callers can catch them apart from library bugs."""


class ModelLoadError(OSError):
    """A model could not be found, downloaded or read; the message names the file or the model."""


class MaxSeqLengthError(ModelLoadError, ValueError):
    """A ``max_seq_length`` that is not a whole number from its least (1; 3 for a cross-encoder) to
    the model's positions, wherever it came from: an argument, a setter or a saved config.

    A :class:`ModelLoadError`, as ``from_pretrained`` and the saved configs have always raised it,
    and a ``ValueError``, as the setters have.
    """
