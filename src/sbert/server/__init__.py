"""``sbert serve``: an HTTP server of embeddings, similarity, search and rerank (the ``serve`` extra).

The endpoints are in :mod:`sbert.server.app`; the batching they share is :mod:`sbert.serving`, which
does not depend on this package.
"""
