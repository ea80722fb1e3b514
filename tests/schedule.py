"""The order pytest-xdist hands out test files in: the slow ones first.

The README's test command, ``python -m pytest -n auto --dist loadfile``, runs each file on one worker,
and a worker takes the next file when it is nearly done. By default xdist hands out the files with
the most tests first, so a file of one or two tests that takes minutes (a documentation page, the
``sbert reproduce`` miniature) started last, and one worker ran it alone while the others had
finished. Here the controller hands files out in collection order, and each worker collects the files
of :data:`SLOW_FILES` first, longest first, so that the last files to start are short ones.

``tests/conftest.py`` imports the two hooks. A plain ``pytest`` run (no workers) keeps pytest's order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol

import pytest

# Test files that take a minute or more (CPU and wall seconds of a serial run, and the docs pages' wall
# seconds under -n 2; 2-core AMD EPYC, 2026-11-28/29), longest first.
# A file renamed or removed here fails tests/test_suite_schedule.py.
SLOW_FILES = (
    "tests/docs_pages/test_page_training.py",
    "tests/docs_pages/test_page_sparse.py",
    "tests/encoder/test_cold_start.py",
    "tests/cli/test_outputs_cli.py",
    "tests/cross_encoder/test_st_oracle.py",
    "tests/inference/test_graph_cache.py",
    "tests/inference/test_gpu_paths.py",
    "tests/cli/test_train.py",
    "tests/cli/test_cli_sparse_search.py",
    "tests/reproduce/test_pipeline.py",
    "tests/evaluation/test_sparse_retrieval.py",
    "tests/inference/test_cuda_pipeline.py",
    "tests/integration/test_training.py",
    "tests/training/test_distributed.py",
    "tests/server/test_openapi.py",
    "tests/docs_pages/test_page_getting_started.py",
    "tests/cli/test_train_sparse.py",
    "tests/integration/test_senteval_protocol.py",
    "tests/index/test_index_compressed.py",
    "tests/docs_pages/test_doctest_static_distill.py",
    "tests/store/test_ray_engine.py",
    "tests/encoder/test_cold_start_integrity.py",
    "tests/inference/test_cpu_classes.py",
    "tests/integration/test_evaluation.py",
    "tests/docs_pages/test_doctest_static_pipeline.py",
    "tests/docs_pages/test_page_corpus_stores.py",
)


class _Item(Protocol):
    nodeid: str


def slow_files_first(items: Sequence[_Item]) -> list[_Item]:
    """The items of :data:`SLOW_FILES` first, in its order; the others after them, in their order.

    Examples:
        >>> from types import SimpleNamespace as Item
        >>> items = [Item(nodeid=n) for n in ("tests/a.py::x", "tests/reproduce/test_pipeline.py::y")]
        >>> [item.nodeid for item in slow_files_first(items)]
        ['tests/reproduce/test_pipeline.py::y', 'tests/a.py::x']
    """
    rank = {path: i for i, path in enumerate(SLOW_FILES)}
    return sorted(items, key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(SLOW_FILES)))


def pytest_configure(config: pytest.Config) -> None:
    # The controller: hand files out in the workers' collection order, not by number of tests.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker of ``-n``: the slow files first
        items[:] = slow_files_first(items)
