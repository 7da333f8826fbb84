"""The help format of every `tooltrail` command that parses its own arguments (the Programs and
the bench targets): descriptions as written, and each option's default at the end of its help,
so `tooltrail COMMAND --help` says what an option is when it is not given."""

from __future__ import annotations

import argparse
import copy
import sys
from typing import Any, NoReturn

# the API key of the client commands (check and golden with --server, apply) when no --api-key
# is given: a key on the command line shows in `ps`
API_KEY_ENV = "TOOLTRAIL_API_KEY"
API_KEY_HELP = f"(env {API_KEY_ENV}; a flag shows in `ps`)"
CONVENTIONS_HELP = ("a YAML file of tool-span conventions tried before the built-in ones "
                    "(env TOOLTRAIL_CONVENTIONS; docs/conventions.md)")
PROJECT_HELP = "with --server: the project its REST calls name (default: the server's)"


def _has_default(action: argparse.Action) -> bool:
    """An option whose default means something to show (not None, off, empty or hidden)."""
    if not action.option_strings or (action.nargs == 0 and action.default is False):
        return False
    return action.default not in (None, False, "", [], argparse.SUPPRESS)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """RawDescriptionHelpFormatter that appends "(default: …)" to options that have one, unless
    their help already says it."""

    def _format_action(self, action: argparse.Action) -> str:
        if _has_default(action) and "default" not in (action.help or ""):
            action = copy.copy(action)
            action.help = (f"{action.help} (default: %(default)s)" if action.help
                           else "default: %(default)s")
        return super()._format_action(action)


class Parser(argparse.ArgumentParser):
    """The parser of every `tooltrail` command: a usage error is one line on stderr naming what
    was wrong and where the options are listed, exit 2 (argparse's usage block of a command with
    every settings flag runs to dozens of lines and hides the one that matters). Subparsers
    inherit the class, so each names its own command. `--help` is unchanged."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        usage_error(self.prog, message)


def usage_error(prog: str, message: str) -> NoReturn:
    """Exit 2 with `prog: message` and where the options are listed, on one line."""
    sys.stderr.write(f"{prog}: {message} (`{prog} --help` lists the options)\n")
    raise SystemExit(2)
