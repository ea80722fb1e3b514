"""The command line names only itself (every ``sbert ...`` command that a message, a docstring or a
help text of src/sbert shows exists, with each of its flags), every flag has a help text, and the
serve banner names a model once.

An error that advises ``sbert store encode --engine ray`` (issue 45: no such command) sends a user
nowhere. The commands are found as tests/test_docs_examples.py finds those of the pages: in the
string literals of every module (docstrings and messages, f-strings with their fields as
placeholders) and in every help, description and epilog of :func:`sbert.cli.build_parser`; each is
written between backticks. A command shown with placeholders (``sbert cluster FILE --method ...``)
cannot be parsed whole, so it is checked word by word: its subcommands exist, and each flag is one
the subcommand it follows accepts.
"""

from __future__ import annotations

import argparse
import ast
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from sbert.cli import build_parser

SRC = Path(__file__).resolve().parents[2] / "src" / "sbert"
COMMAND = re.compile(r"`sbert(?: [^`]*)?`")


def _literals(path: Path) -> Iterator[str]:
    """The string literals of a module; an f-string's fields become ``X``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr):
            yield "".join(
                part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "X"
                for part in node.values
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
                yield from _parsers(sub)


def _help_texts(parser: argparse.ArgumentParser) -> Iterator[str]:
    for each in _parsers(parser):
        yield from (text for text in (each.description, each.epilog) if text)
        for action in each._actions:
            yield from (text for text in (action.help,) if isinstance(text, str))
            for choice in getattr(action, "_choices_actions", []):
                yield from (text for text in (choice.help,) if isinstance(text, str))


def named_commands() -> dict[str, list[str]]:
    """Every backticked ``sbert ...`` command, with where it is shown."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for text in _literals(path):
            for command in COMMAND.findall(text):
                found.setdefault(command.strip("`"), []).append(str(path.relative_to(SRC.parent)))
    for text in _help_texts(build_parser()):
        for command in COMMAND.findall(text):
            found.setdefault(command.strip("`"), []).append("the parser's help")
    return found


PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*")  # FILE, DIR, RECIPE; an f-string's field is X


def problems(command: str, parser: argparse.ArgumentParser) -> list[str]:
    """What in ``command`` the parser does not know: a subcommand or a flag (empty: all known)."""
    words = [w for w in shlex.split(command.replace("...", " "), posix=True)[1:] if w not in {"|", "…"}]
    return _problems(words, parser)


def _problems(words: list[str], parser: argparse.ArgumentParser) -> list[str]:
    wrong = []
    for at, word in enumerate(words):
        if word.startswith("-"):
            flag = word.split("=", 1)[0]
            if flag not in parser._option_string_actions:
                wrong.append(f"{flag} is no flag of `{parser.prog}`")
            continue
        nested = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if nested is None:
            continue  # a positional value or a placeholder (FILE, DIR)
        if PLACEHOLDER.fullmatch(word):  # any subcommand (`sbert train RECIPE`): one must take the rest
            rests = [_problems(words[at + 1 :], sub) for sub in nested.choices.values()]
            return wrong + (
                [] if [] in rests else [f"no subcommand of `{parser.prog}` takes {words[at + 1 :]}"]
            )
        alternatives = word.split("|")
        missing = [name for name in alternatives if name not in nested.choices]
        if missing:
            return [*wrong, f"{' '.join(missing)} is no subcommand of `{parser.prog}`"]
        parser = nested.choices[alternatives[0]]
    return wrong


def test_the_search_finds_the_commands_it_should() -> None:
    found = named_commands()
    assert len(found) >= 40
    assert "sbert index build --dimensions" in found  # a help text (cli/encode.py)
    assert "sbert data download X" in found  # an f-string (data/paths.py)


def test_the_check_catches_a_command_that_does_not_exist() -> None:
    parser = build_parser()
    assert problems("sbert store encode --engine ray", parser) == ["store is no subcommand of `sbert`"]
    assert problems("sbert encode FILE -o DIR/ --engine ray", parser) == []
    assert problems("sbert index build --engine ray", parser) == [
        "--engine is no flag of `sbert index build`"
    ]
    assert problems("sbert train RECIPE --dev-retrieval SET", parser) == []  # `sbert train file` takes it
    assert problems("sbert train RECIPE --engine ray", parser) != []


@pytest.mark.parametrize("command", sorted(named_commands()))
def test_every_named_command_exists(command: str) -> None:
    wrong = problems(command, build_parser())
    assert not wrong, f"`{command}` (in {', '.join(sorted(set(named_commands()[command])))}): {wrong}"


def test_every_flag_has_help() -> None:
    missing = [
        f"{each.prog} {'/'.join(action.option_strings)}"
        for each in _parsers(build_parser())
        for action in each._actions
        if action.option_strings and not action.help and action.help is not argparse.SUPPRESS
    ]
    assert missing == []


def test_the_serve_banner_names_a_model_once() -> None:
    from types import SimpleNamespace

    from sbert.cli.serve import _described

    bundled = SimpleNamespace(name="all-MiniLM-L6-v2")
    plan = "cpu, bfloat16, openvino, batches of up to 8192 padded tokens"
    assert _described(["all-MiniLM-L6-v2"], bundled, plan) == f"all-MiniLM-L6-v2 ({plan})"
    renamed = _described(["tiny", "text-embedding-3-small"], SimpleNamespace(name="/m/t"), plan)
    assert renamed == f"tiny = text-embedding-3-small: /m/t ({plan})"
