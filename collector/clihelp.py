"""The help format of every `tooltrail` command that parses its own arguments (the Programs and
the bench targets): descriptions as written, and each option's default at the end of its help,
so `tooltrail COMMAND --help` says what an option is when it is not given."""

from __future__ import annotations

import argparse
import copy

# the API key of the client commands (check and golden with --server, apply) when no --api-key
# is given: a key on the command line shows in `ps`
API_KEY_ENV = "TOOLTRAIL_API_KEY"
API_KEY_HELP = f"(env {API_KEY_ENV}; a flag shows in `ps`)"
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
