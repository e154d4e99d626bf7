"""argparse with every error on one line in the command's words, naming the flag, and for a
mistyped flag, choice or command the closest one."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from ._messages import one_line

__all__ = ["Parser"]


def _did_you_mean(given: str, offered: Sequence[str]) -> str:
    """``; did you mean X?``: the offered words that a shortened one begins (flags are never
    taken abbreviated), else the one closest to a mistyped one, if any is close."""
    begun = [word for word in offered if word.startswith(given)] if len(given.lstrip("-")) >= 1 else []
    close = begun[:3] or difflib.get_close_matches(given, offered, n=1)
    return f"; did you mean {' or '.join(close)}?" if close else ""


#: argparse's messages, and the command's own words for them: each error names its flag first.
_PARSER_MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"the following arguments are required: (?P<flags>.*)"), r"\g<flags>: required"),
    (re.compile(r"argument (?P<flag>\S+): invalid float value: (?P<value>.*)"),
     r"\g<flag>: expected a number, got \g<value>"),
    (re.compile(r"argument (?P<flag>\S+): invalid int value: (?P<value>.*)"),
     r"\g<flag>: expected an integer, got \g<value>"),
    (re.compile(r"argument (?P<flag>\S+): expected one argument"), r"\g<flag>: expected a value after it"),
    (re.compile(r"argument (?P<flag>\S+): (?P<message>.*)"), r"\g<flag>: \g<message>"),
)


class Parser(argparse.ArgumentParser):
    """argparse, with every error on one line in the command's words (``projmech release: error:
    --epsilon: expected a number, got 'one'``), naming the flag, and for a mistyped flag, choice
    or command the closest one, instead of the usage; the subcommands' parsers are of this class
    too."""

    #: The subcommands' parsers by name (set on the top-level parser by :func:`~projmech.cli.commands.build_parser`).
    commands: Mapping[str, Parser] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviated flags: `demo --out x` silently meant --out-dir, and an abbreviation that
        # a later flag makes ambiguous would break a user's script; a prefix gets "did you mean".
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if self.commands and message == "the following arguments are required: command":
            message = (f"give a command: {', '.join(self.commands)} ('{self.prog} COMMAND --help' describes "
                       "each)")
        for pattern, words in _PARSER_MESSAGES:
            if pattern.fullmatch(message):
                message = pattern.sub(words, message)
                break
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's check of a value against a flag's choices (or of the command's name), whose
        # message, lists in quotes with no suggestion, differs from one Python to the next.
        choices = action.choices
        if choices is None or value in choices:
            return
        offered = [str(choice) for choice in choices]
        if action.dest == "command":
            raise argparse.ArgumentError(None, f"{value}: no such command{_did_you_mean(str(value), offered)} "
                                               f"(the commands: {', '.join(offered)})")
        raise argparse.ArgumentError(action, f"expected one of {', '.join(offered)}, got {value!r}"
                                             f"{_did_you_mean(str(value), offered)}")

    def parse_command_line(self, argv: Sequence[str] | None) -> argparse.Namespace:
        """The arguments of ``projmech COMMAND ...``; an unknown flag is refused by its command's
        parser, which suggests the closest of its own flags."""
        args, extras = self.parse_known_args(argv)
        if extras:
            self.commands.get(getattr(args, "command", None) or "", self).refuse_extras(extras)
        return args

    def flags(self) -> set[str]:
        """The parser's long flags (``--epsilon``)."""
        return {option for option in self._option_string_actions if option.startswith("--")}

    def refuse_extras(self, extras: Sequence[str]) -> NoReturn:
        """Refuse what the parser did not take: a flag it does not have, or a value no flag took."""
        flags = [extra for extra in extras if extra.startswith("-") and extra != "-"]
        if not flags:
            self.error(f"{extras[0]!r}: a value no flag takes (each flag takes at most one value; quote one "
                       "with spaces)")
        flag = flags[0].partition("=")[0]
        suggestion = _did_you_mean(flag, sorted(self.flags()))
        self.error(f"{flag}: no such flag{suggestion or f' ({self.prog} --help lists them)'}")


