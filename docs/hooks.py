"""MkDocs hooks: pages made at build time from the code and the committed report.

- ``reference/cli.md``: the committed page lists the commands (checked against the parsers by
  ``tests/test_readme_claims.py``; ``python docs/hooks.py`` prints the list); the build appends every
  ``sbert`` subcommand's ``--help``, rendered from :func:`sbert.cli.build_parser`, so the CLI
  reference cannot drift from the parsers.
- ``paper/report.md`` and its charts: ``reports/full/REPORT.md`` as committed, so the site carries
  the reproduction report without a copy in ``docs/``.

Nothing here touches the network.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT_DIR = ROOT / "reports" / "full"
HELP_WIDTH = "100"


def _subcommands(
    parser: argparse.ArgumentParser, prefix: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subcommands(sub, f"{prefix} {name}")


def command_table() -> str:
    """Markdown: every ``sbert`` command (leaves of the parser tree) with its one-line help."""
    from sbert.cli import build_parser

    rows = ["| command | what it does |", "|---|---|"]
    parser = build_parser()
    helps: dict[str, str] = {}
    for name, sub in _subcommands(parser, "sbert"):
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    helps[f"{name} {choice.dest}"] = " ".join((choice.help or "").split())
    for name, sub in _subcommands(parser, "sbert"):
        nested = any(isinstance(action, argparse._SubParsersAction) for action in sub._actions)
        if name != "sbert" and not nested:
            rows.append(f"| `{name}` | {helps.get(name, '')} |")
    return "\n".join(rows) + "\n"


def cli_reference() -> str:
    """Markdown: one section per ``sbert`` command, its ``--help`` verbatim."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH  # argparse wraps to $COLUMNS: the page must not depend on the terminal
    try:
        from sbert.cli import build_parser

        parser = build_parser()
        lines = [
            "## Every command's help",
            "",
            "Generated from `sbert.cli.build_parser()` when this site was built: each section is the",
            "command's `--help`, as the installed `sbert` prints it.",
            "",
        ]
        for name, sub in _subcommands(parser, "sbert"):
            depth = min(name.count(" ") + 1, 3)
            lines += [f"{'#' * (depth + 1)} `{name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
        return "\n".join(lines)
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def report_page() -> str:
    text = (REPORT_DIR / "REPORT.md").read_text(encoding="utf-8")
    header = (
        "<!-- generated from reports/full/REPORT.md by docs/hooks.py: edit that file (or rerun "
        "`sbert reproduce --report-only`), not this page -->\n\n"
    )
    return header + text


def on_files(files, config):  # type: ignore[no-untyped-def]
    from mkdocs.structure.files import File

    files.append(File.generated(config, "paper/report.md", content=report_page()))
    for chart in sorted(REPORT_DIR.glob("*.png")):
        files.append(File.generated(config, f"paper/{chart.name}", abs_src_path=str(chart)))
    return files


def on_page_markdown(markdown, page, config, files):  # type: ignore[no-untyped-def]
    if page.file.src_uri == "reference/cli.md":
        return markdown.rstrip() + "\n\n" + cli_reference()
    return markdown


if __name__ == "__main__":
    print(command_table(), end="")
