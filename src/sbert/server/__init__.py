"""``sbert serve``: an HTTP server of embeddings, similarity, search and rerank (the ``serve`` extra).

The batching on one model thread is :mod:`sbert.server.batcher` (no HTTP: it runs without the extra),
the endpoints :mod:`sbert.server.app`, the process :mod:`sbert.server.run`.
"""
