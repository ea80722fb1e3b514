"""Prometheus metrics of one server, in a registry of its own (the process-wide one is left alone)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from sbert.server.batcher import BatchStats

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
TOKEN_BUCKETS = (16, 64, 256, 1024, 4096, 16384, 65536)


class Metrics:
    """Requests by endpoint and status (errors are the 4xx and 5xx), latency, batches, queue depth.

    Examples:
        >>> metrics = Metrics(queue_depth=lambda: 0)
        >>> metrics.request("/health", 200, 0.001)
        >>> b'sbert_requests_total{endpoint="/health",status="200"} 1.0' in metrics.exposition()
        True
    """

    def __init__(self, queue_depth: Callable[[], float], in_flight: Callable[[], float] = lambda: 0) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "sbert_requests",
            "HTTP requests by endpoint and status code",
            ["endpoint", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "sbert_request_duration_seconds",
            "Time from request to response, by endpoint",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.batches = Counter(
            "sbert_batches",
            "Merged batches by kind: embed (texts to vectors), pairs (a cross-encoder's /rerank pairs)",
            ["kind"],
            registry=self.registry,
        )
        self.batch_requests = Histogram(
            "sbert_batch_requests",
            "Requests merged into one batch",
            buckets=SIZE_BUCKETS,
            registry=self.registry,
        )
        self.batch_sentences = Histogram(
            "sbert_batch_sentences",
            "Sentences (or pairs) in one merged batch",
            buckets=SIZE_BUCKETS,
            registry=self.registry,
        )
        self.batch_tokens = Histogram(
            "sbert_batch_tokens",
            "Tokens in one merged batch (each input up to the model's limit)",
            buckets=TOKEN_BUCKETS,
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            "sbert_batch_duration_seconds",
            "Encoding time of one merged batch",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        Gauge("sbert_queue_items", "Sentences waiting for the model", registry=self.registry).set_function(
            queue_depth
        )
        Gauge("sbert_requests_in_flight", "Requests being served", registry=self.registry).set_function(
            in_flight
        )

    def request(self, endpoint: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, str(status)).inc()
        self.latency.labels(endpoint).observe(seconds)

    def batch(self, stats: BatchStats) -> None:
        """Called on the batcher's worker thread (prometheus_client is thread-safe)."""
        self.batches.labels(stats.kind).inc()
        self.batch_requests.observe(stats.requests)
        self.batch_sentences.observe(stats.sentences)
        self.batch_tokens.observe(stats.tokens)
        self.batch_seconds.observe(stats.seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
