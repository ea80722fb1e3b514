"""The proxy retrieval sets built from the data folder are well formed (skipped without SBERT_DATA)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sbert.cli.evaluate_retrieval import PROXY_SETS as CLI_PROXY_SETS
from sbert.data.beir import PROXY_SETS, load_retrieval_set, proxy_set


def test_the_command_offers_every_proxy_set() -> None:
    assert CLI_PROXY_SETS == PROXY_SETS


@pytest.mark.parametrize("name", ["sick-proxy", "sts12-16-proxy"])
def test_scored_proxy_sets_are_well_formed(name: str, data_dir: Path) -> None:
    proxy = proxy_set(name, data_dir)
    assert proxy.name == name and proxy.queries and set(proxy.qrels) == set(proxy.queries)
    assert not set(proxy.corpus.values()) & set(proxy.queries.values())  # no query finds itself
    assert all(docs and all(doc in proxy.corpus for doc in docs) for docs in proxy.qrels.values())
    assert len(set(proxy.corpus.values())) == len(proxy.corpus)  # equal texts are one document
    assert all(text == text.strip() and text for text in proxy.corpus.values())


def test_the_new_sets_have_their_sizes(data_dir: Path) -> None:
    sizes = {
        name: (len(proxy.queries), len(proxy.corpus))
        for name in ("sick-proxy", "sts12-16-proxy")
        for proxy in [load_retrieval_set(name, data_dir)]
    }
    assert sizes == {"sick-proxy": (1221, 3444), "sts12-16-proxy": (3051, 17344)}


def test_an_unknown_proxy_set_is_named(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="sick-proxy"):
        proxy_set("sick", data_dir)
