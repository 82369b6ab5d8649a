"""The ``xlsxplan`` command line: a thin layer over the core that catches only xlsxplan's own errors.

Each command lives in its own module in this package and exposes ``ORDER`` (its place in ``--help``) and
``register(subparsers)``, which adds its parser and sets ``handler``; commands are discovered, not listed, so adding
one touches no other file.

Exit status: 0 success; 1 the result is an Excel error or a check failed; 2 bad usage, a file that cannot be read
or written, or a failure nothing foresaw (one line; ``--debug`` prints its traceback); 130 interrupted; 141 the
reader of the output went away (``| head``).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..errors import XlsxplanError
from .common import (
    EXIT_FORMULA_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    escaped_output,
    format_value,
    strip_debug,
    unexpected,
    warn_catalog_problems,
)

__all__ = ["main", "format_value", "EXIT_OK", "EXIT_FORMULA_ERROR", "EXIT_USAGE"]


def _parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command line's parser. Where ``argv`` starts with a command's name, only that command's parser is built
    (its module alone imported: ``xlsxplan recalc`` loads no planning module); else every command's, for
    ``--help``, ``--version`` and the message that names the commands. A command's own parser, and so its
    ``--help`` and messages, is the same either way."""
    parser = argparse.ArgumentParser(
        prog="xlsxplan",
        description="LLM capacity, cost and training planning: Excel functions, template workbooks and "
        "headless recalculation.",
    )
    parser.add_argument("--version", action="version", version=f"xlsxplan {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="on an unexpected failure, print the traceback (anywhere on the line)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    names = [info.name for info in pkgutil.iter_modules(__path__) if info.name.startswith("cmd_")]
    if argv and f"cmd_{argv[0]}" in names:  # each module cmd_NAME adds the command NAME
        names = [f"cmd_{argv[0]}"]
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    for module in sorted(modules, key=lambda m: (m.ORDER, m.__name__)):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status. Whatever it prints goes through
    :func:`~.common.escaped_output`: no escape sequence or bidi override from a workbook, a config or a catalog
    reaches the terminal raw, in any command or message."""
    with escaped_output():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = strip_debug(argv)
    parser = _parser(argv)
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        status = handler(args)
    except XlsxplanError as err:
        print(f"xlsxplan: error: {err.message}", file=sys.stderr)
        warn_catalog_problems(already_said=err.message)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("xlsxplan: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `xlsxplan functions | head`: the reader left; say nothing more
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
        return 141  # 128 + SIGPIPE, as a shell reports a command killed by a closed pipe
    except (Exception, RecursionError, MemoryError) as err:  # what escaped: one line, never a traceback
        return unexpected(err, debug)
    warn_catalog_problems()  # after the command's own output: a user preset left out, reported by every command
    return status
