"""Command line: ``projmech release`` on a CSV file, ``projmech demo`` on the embedded Adult data.

Every error reaches the user as one line on stderr, naming the flag (and the file) at fault, and a
non-zero exit status, argument errors included (with the closest flag or command to a mistyped one);
``PROJMECH_TRACEBACK=1`` shows the traceback of an unexpected one. Every warning is one line too.
Each command lives in a module of its own (:mod:`~projmech.cli._release`, ``audit``, ``synthesize``,
``demo``); this one parses the command line and reports what ends a command.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from . import _audit as audit
from . import _demo as demo
from . import _release as release
from . import _synthesize as synthesize
from ._messages import in_flags, one_line, warnings_in_one_line
from ._parser import Parser

__all__ = ["main", "build_parser"]


def build_parser() -> Parser:
    """``projmech``'s parser, with each command's."""
    parser = Parser(
        prog="projmech", description="Differentially private release of linear queries. Every error is one line "
        "naming the flag (and the file) at fault, with a non-zero exit status; no output overwrites an input, and "
        "an existing output is replaced only with --force. 'projmech COMMAND --help' describes each command.")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in (release, audit, synthesize, demo):
        command.add_parser(commands)
    parser.commands = commands.choices
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``projmech COMMAND ...`` (``argv``, by default the program's); the exit status."""
    parser = build_parser()
    args = parser.parse_command_line(argv)
    flags = parser.commands[args.command].flags()
    try:
        with warnings_in_one_line(f"projmech {args.command}", args, flags):
            return args.handler(args)
    except KeyboardInterrupt:  # outputs being written were removed, earlier ones left as they were
        print(f"projmech {args.command}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError) as error:
        print(f"projmech {args.command}: error: {one_line(in_flags(error, args, flags))}", file=sys.stderr)
        return 2
    except Exception as error:  # a solver failure, or a bug: still one line, unless asked
        if os.environ.get("PROJMECH_TRACEBACK"):
            raise
        print(f"projmech {args.command}: error: {type(error).__name__}: {one_line(error)} "
              "(set PROJMECH_TRACEBACK=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
