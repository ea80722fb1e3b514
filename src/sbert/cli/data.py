"""``sbert data download [DIR]`` and ``sbert data check [DIR]``: the evaluation data, fetched and verified."""

from __future__ import annotations

import argparse
import os
import sys

from sbert.data.paths import DATA_ENV, default_data_dir


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "data", help="download and check the evaluation data (STSb, SICK, STS12-16, ...)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    where = f"data directory (default: ${DATA_ENV}, else {default_data_dir()})"
    download = actions.add_parser(
        "download",
        help="fetch the public releases into the layout sbert reads",
        description="Fetch STSb, SICK, STS12-16, SNLI (dev, test) and the SentEval transfer tasks (and, "
        "when named with --only, BEIR's SciFact and NFCorpus) from their original homes (or a mirror), "
        "record SHA-256 sums, and resume interrupted downloads.",
    )
    download.add_argument("dir", nargs="?", default=None, help=where)
    download.add_argument(
        "--only",
        nargs="+",
        default=None,
        metavar="NAME",
        help="only these data sets (STSb SICK STS12 ... SentEval; SciFact and NFCorpus come only when named)",
    )
    download.add_argument(
        "--mirror",
        default=None,
        help="base URL holding the files under their base names ($SBERT_DATA_MIRROR)",
    )
    download.set_defaults(handler=run_download)
    check = actions.add_parser("check", help="verify a data directory against its SHA256SUMS")
    check.add_argument("dir", nargs="?", default=None, help=where)
    check.set_defaults(handler=run_check)


def _data_dir(args: argparse.Namespace) -> str:
    return args.dir or os.environ.get(DATA_ENV) or str(default_data_dir())


def run_download(args: argparse.Namespace) -> int:
    from sbert.data.download import DEFAULT_DATASETS, download

    target = _data_dir(args)
    written = download(
        target,
        tuple(args.only or DEFAULT_DATASETS),
        mirror=args.mirror,
        on_progress=lambda message: print(message, file=sys.stderr),
    )
    print(
        f"{len(written)} files written into {target}; verify with: sbert data check {target}", file=sys.stderr
    )
    return 0


def run_check(args: argparse.Namespace) -> int:
    from sbert.data.download import check

    target = _data_dir(args)
    good, bad, missing = check(target)
    for path in bad:
        print(f"{target}/{path}: SHA-256 differs from SHA256SUMS", file=sys.stderr)
    for path in missing:
        print(f"{target}/{path}: missing", file=sys.stderr)
    print(f"{len(good)} files good, {len(bad)} bad, {len(missing)} missing in {target}")
    if missing:
        print(f"fill it with: sbert data download {target}", file=sys.stderr)
    return 1 if bad or missing else 0
