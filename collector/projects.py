"""Projects: the scope of conversation keys and expectations (docs/api.md, "Projects").

Every conversation and expectation belongs to one project. A conversation key names one
conversation within its project: two services that both say `session-1` under different
projects keep two conversations. OTLP spans name their project by the resource attribute
`tooltrail.project`; the REST routes by `?project=`; data that names none belongs to the
configured default project (`Settings.project`), which is where the data stored before
projects existed was moved (migration 0005).
"""

from __future__ import annotations

import re

from tooltrail.collector.errors import InvalidPayload

DEFAULT_PROJECT = "default"
PROJECT_ATTRIBUTE = "tooltrail.project"  # the OTLP resource attribute naming a span's project
# A name, not free text: it appears in URLs, query strings and the turn keys of captured calls
# (`turn#0:PROJECT:KEY`, where a `:` inside it would be ambiguous).
PROJECT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
PROJECT_RULE = "1–100 characters of letters, digits, '.', '_' or '-', starting with a letter " \
    "or digit"


class BadProject(InvalidPayload):
    """A project name that breaks PROJECT_RULE."""


def project_problem(name: object, what: str = "project") -> str | None:
    """Why `name` cannot be a project name, or None."""
    if not isinstance(name, str) or PROJECT_PATTERN.fullmatch(name) is None:
        return f"{what} {name!r} is not a project name ({PROJECT_RULE})"
    return None


def check_project(name: object, what: str = "project") -> str:
    """`name`, when it is a project name; else BadProject."""
    problem = project_problem(name, what)
    if problem is not None:
        raise BadProject(problem)
    return str(name)
