#!/usr/bin/env python3
"""Rewrite references to the old import names `collector`, `matcher` and `migrations` to the
one installed name, `tooltrail.collector`, `tooltrail.matcher`, `tooltrail.migrations`.

The folders keep their names (collector/ at the repository top is the package
tooltrail.collector); only *module names* change. Idempotent: every rule requires the old
name not to follow a `.`, so `tooltrail.collector` is never rewritten again, and the script
can be run on a converted tree and again after merging unconverted files.

    python3 scripts/dev/rename_imports.py            # rewrite in place, list changed files
    python3 scripts/dev/rename_imports.py --check    # list what would change; exit 1 if any

A rewritten import may sort differently (tooltrail.* is first-party, beside tests.*): the
changed Python files are then sorted with `ruff check --fix --select I` (the ruff of --ruff,
else the one on PATH or beside this interpreter; skipped with a note when there is none).
Lines the rewrite made longer than the line limit are left to `ruff check` to report.

What is rewritten:
- Python code: `import collector.x [as y]`, `from collector.x import y`; in a file with a bare
  `import collector...` (which binds the name `collector`), every use of that name in code.
- Python string literals (not docstrings): dotted module names (`"collector.worker"`,
  `"collector.cli:main"`, a patch target, code run by `python -c`), and `import collector` /
  `from collector import` inside them.
- Running the command line: `-m collector.cli` (in any file) and `"-m", "collector.cli"` (an
  argument list) become `-m tooltrail`.
- Docstrings, comments, Markdown and the other text files (shell scripts, the Dockerfile,
  YAML, .ci/run): code only — `python -m collector...`, `from collector... import`,
  `import collector...` at the start of a line or of a `-c` program. Prose that names a module
  by its folder (`collector.store.tables`) is left as is.

Not rewritten: relative imports, file paths (`collector/cli.py`), bare words in prose or in
strings (`"collector"` may be a folder name: such cases are changed by hand), and any file
holding the line `# rename_imports: skip` (code that means some *other* `collector`, such as
the agent project of tests/install).
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OLD = ("collector", "matcher", "migrations")
PREFIX = "tooltrail."
SKIP_MARK = "# rename_imports: skip"
# never rewritten: recorded data, and this script (its docstring shows the old names)
EXCLUDED_DIRS = ("tests/captures/",)
EXCLUDED_FILES = ("scripts/dev/rename_imports.py",)
TEXT_SUFFIXES = {".md", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".txt", ".sh"}
TEXT_NAMES = {"Dockerfile", "run", "test", "serve", "demo", "lock", "venv"}
# a dotted name ending in one of these is a file name (collector.yaml), not a module
FILE_EXTENSIONS = {"py", "pyc", "c", "h", "so", "yaml", "yml", "json", "jsonl", "toml", "md",
                   "html", "css", "txt", "mako", "ini", "cfg", "db", "log", "pb", "bin", "gz",
                   "whl", "lock", "env", "sh"}

_NAMES = "|".join(OLD)
# `collector` as a module name's first part: not after a word character, `.`, `/` or `-`
_HEAD = rf"(?<![\w./\\-])(?:{_NAMES})"
DOTTED = re.compile(rf"{_HEAD}(?:\.[A-Za-z_]\w*)+")
# code in prose: `python -m collector.cli`, `from collector.x import`, `import collector.x`
# at a line's start, after `>>> `, `;` or the quote opening a `-c` program
RUN_MODULE = re.compile(rf"(?<=-m )(?={_HEAD}\b)")
# the command line is `python -m tooltrail` (tooltrail/__main__.py runs collector/cli.py)
RUN_CLI = re.compile(r"(?<=-m )collector\.cli\b(?![.\w])")
CLI_MODULE = "collector.cli"
FROM_IMPORT = re.compile(rf"(?<=\bfrom )(?=(?:{_NAMES})(?:\.\w+)*\s+import\b)")
IMPORT_LINE = re.compile(
    rf"""((?:^|(?<=[;"'])|(?<=>>> ))[ \t]*import[ \t]+)(?=(?:{_NAMES})\b(?![-/]))""",
    re.MULTILINE)
# in an import statement's module list: `import a, collector.x`
IMPORT_LIST_ITEM = re.compile(rf"""((?:^|(?<=[;"']))[ \t]*import[ \t]+[^\n;]*?,[ \t]*)"""
                              rf"(?=(?:{_NAMES})\b(?![-/]))", re.MULTILINE)


def _not_a_file(match: re.Match[str]) -> bool:
    return match.group(0).rsplit(".", 1)[-1] not in FILE_EXTENSIONS


def rewrite_prose(text: str) -> str:
    """Code-like references only (commands and import statements)."""
    text = RUN_CLI.sub("tooltrail", text)
    text = RUN_MODULE.sub(PREFIX, text)
    text = FROM_IMPORT.sub(PREFIX, text)
    text = IMPORT_LINE.sub(lambda m: m.group(1) + PREFIX, text)
    previous = None
    while previous != text:  # `import a, collector, matcher`: one item per pass
        previous = text
        text = IMPORT_LIST_ITEM.sub(lambda m: m.group(1) + PREFIX, text)
    return text


def rewrite_string_body(body: str) -> str:
    """A string literal's text: a module name, a command line or a program."""
    body = rewrite_prose(body)
    return DOTTED.sub(lambda m: PREFIX + m.group(0) if _not_a_file(m) else m.group(0), body)


def _string_parts(token: str) -> tuple[str, str, str]:
    """(prefix and opening quote, body, closing quote) of a string token."""
    match = re.match(r"(?s)([A-Za-z]*)('''|\"\"\"|'|\")(.*)\2\Z", token)
    if match is None:
        return "", token, ""
    return match.group(1) + match.group(2), match.group(3), match.group(2)


def _docstring_positions(tokens: list[tokenize.TokenInfo]) -> set[tuple[int, int]]:
    """Start positions of the string tokens that are docstrings: a statement that is only a
    string, first in a module, class or function body (other lone strings count too)."""
    positions = set()
    ignorable = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                 tokenize.COMMENT, tokenize.ENCODING}
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.STRING:
            continue
        j = i - 1
        while j >= 0 and tokens[j].type in (tokenize.NL, tokenize.COMMENT):
            j -= 1
        before = tokens[j] if j >= 0 else None
        k = i + 1
        while k < len(tokens) and tokens[k].type == tokenize.COMMENT:
            k += 1
        after = tokens[k] if k < len(tokens) else None
        starts_statement = before is None or before.type in ignorable or (
            before.type == tokenize.OP and before.string == ":")
        ends_statement = after is None or after.type in (tokenize.NEWLINE, tokenize.ENDMARKER)
        if starts_statement and ends_statement:
            positions.add(tok.start)
    return positions


def _bound_names(tokens: list[tokenize.TokenInfo]) -> set[str]:
    """Old names a bare `import collector[.x]` (no `as`) binds in this module."""
    bound = set()
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.NAME and tok.string == "import":
            prev = tokens[i - 1] if i else None
            if prev is not None and prev.type not in (tokenize.NEWLINE, tokenize.NL,
                                                      tokenize.INDENT, tokenize.DEDENT,
                                                      tokenize.ENCODING) and not (
                    prev.type == tokenize.OP and prev.string == ";"):
                continue  # `from x import`: binds no module name
            j = i + 1
            while j < len(tokens) and tokens[j].type not in (tokenize.NEWLINE,):
                name = tokens[j]
                if name.type == tokenize.NAME and name.string in OLD:
                    k = j + 1
                    while k < len(tokens) and (tokens[k].string == "." or (
                            tokens[k].type == tokenize.NAME and tokens[k - 1].string == ".")):
                        k += 1
                    if not (k < len(tokens) and tokens[k].string == "as"):
                        bound.add(name.string)
                    j = k
                    continue
                j += 1
    return bound


def rewrite_python(source: str) -> str:
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    docstrings = _docstring_positions(tokens)
    bound = _bound_names(tokens)
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []
    in_import = False  # inside `import ...` / `from ... import` (to the statement's end)
    import_kind = ""
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i else None
        if tok.type == tokenize.NEWLINE or (tok.type == tokenize.OP and tok.string == ";"):
            in_import = False
        if tok.type == tokenize.NAME and tok.string in ("import", "from") and (
                prev is None or prev.type in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT,
                                              tokenize.DEDENT, tokenize.ENCODING)
                or (prev.type == tokenize.OP and prev.string == ";")):
            in_import, import_kind = True, tok.string
            continue
        if tok.type == tokenize.NAME and tok.string in OLD:
            after_dot = prev is not None and prev.type == tokenize.OP and prev.string == "."
            if after_dot:
                continue
            if in_import:
                if prev is not None and prev.type == tokenize.NAME and prev.string == "as":
                    continue  # `import x as collector`: a local name
                # the module part: after `from`, or any dotted name of an `import` list
                # (not the names after `from x import`)
                if import_kind == "from" and _after_keyword(tokens, i, "import"):
                    continue
                if import_kind == "import" or _directly_after(tokens, i, "from"):
                    edits.append((tok.start, tok.end, PREFIX + tok.string))
                continue
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            keyword_argument = nxt is not None and nxt.type == tokenize.OP and nxt.string == "="
            if tok.string in bound and not keyword_argument and not (
                    prev is not None and prev.type == tokenize.NAME
                    and prev.string in ("def", "class", "as")):
                edits.append((tok.start, tok.end, PREFIX + tok.string))
        elif tok.type == tokenize.STRING:
            opening, body, closing = _string_parts(tok.string)
            if not closing:
                continue
            if body == CLI_MODULE and _run_module_argument(tokens, i):
                edits.append((tok.start, tok.end, opening + "tooltrail" + closing))
                continue
            new = rewrite_prose(body) if tok.start in docstrings else rewrite_string_body(body)
            if new != body:
                edits.append((tok.start, tok.end, opening + new + closing))
        elif tok.type == tokenize.COMMENT:
            new = rewrite_prose(tok.string)
            if new != tok.string:
                edits.append((tok.start, tok.end, new))
    if not edits:
        return source
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    out = source
    for (srow, scol), (erow, ecol), text in sorted(edits, reverse=True):
        start, end = offsets[srow - 1] + scol, offsets[erow - 1] + ecol
        out = out[:start] + text + out[end:]
    return out


def _run_module_argument(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    """Whether the string at `i` follows `"-m",` (an argument list running a module)."""
    before = [t for t in tokens[max(0, i - 6):i] if t.type not in (tokenize.NL, tokenize.COMMENT)]
    return (len(before) >= 2 and before[-1].string == ","
            and before[-2].type == tokenize.STRING and before[-2].string in ('"-m"', "'-m'"))


def _directly_after(tokens: list[tokenize.TokenInfo], i: int, keyword: str) -> bool:
    return i > 0 and tokens[i - 1].type == tokenize.NAME and tokens[i - 1].string == keyword


def _after_keyword(tokens: list[tokenize.TokenInfo], i: int, keyword: str) -> bool:
    """Whether `keyword` comes earlier in this statement (walking back to its start)."""
    j = i - 1
    while j >= 0 and tokens[j].type not in (tokenize.NEWLINE, tokenize.ENCODING):
        if tokens[j].type == tokenize.NAME and tokens[j].string == keyword:
            return True
        j -= 1
    return False


def is_python(path: Path) -> bool:
    if path.suffix == ".py":
        return True
    try:
        first = path.open("rb").readline()
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def candidates() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    paths = []
    for name in sorted(set(filter(None, listed))):
        if name.startswith(EXCLUDED_DIRS) or name in EXCLUDED_FILES:
            continue
        path = ROOT / name
        if path.is_symlink() or not path.is_file():
            continue
        if is_python(path) or path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES:
            paths.append(path)
    return paths


def rewrite(path: Path) -> str:
    text = path.read_text("utf-8")
    if SKIP_MARK in text:
        return text
    return rewrite_python(text) if is_python(path) else rewrite_prose(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a "
                        "file would change")
    parser.add_argument("--ruff", help="the ruff that sorts the rewritten imports")
    args = parser.parse_args()
    changed = []
    for path in candidates():
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(path)
        if new != text:
            changed.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(new, "utf-8")
    for name in changed:
        print(name)
    python = [str(ROOT / name) for name in changed if is_python(ROOT / name)]
    if python and not args.check:
        ruff = args.ruff or shutil.which("ruff") or shutil.which(
            "ruff", path=str(Path(sys.executable).parent))
        if ruff is None:
            print("note: no ruff found; sort the imports with `ruff check --fix --select I`",
                  file=sys.stderr)
        else:
            subprocess.run([ruff, "check", "--quiet", "--fix", "--select", "I", *python],
                           cwd=ROOT, check=False)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
