"""The repository's own documents hold together: every relative link in README.md,
ARCHITECTURE.md and docs/*.md names a file that exists (and a heading of it, for `#anchor`s),
and no file cites the design pack's documents as if they were in the repository (the code
cites docs/ instead: ARCHITECTURE.md)."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "ARCHITECTURE.md", *(ROOT / "docs").glob("*.md")])
# The design pack's file names (ARCHITECTURE.md is the repository's own now). Spelled in
# pieces so that this file does not cite them itself.
PACK = tuple(name + ".md" for name in ("MATCHING", "CONVENTIONS", "OTLP", "API"))
PACK_DIR = "shared" + "/design"
# Anything beside the checkout: the repository must refer to nothing it does not contain.
OUTSIDE = re.compile(r"(?<![\w.])\.\./" + "shared" + r"\b|\bshared/" + "seeds")
SKIPPED_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", ".mypy_cache",
                ".ruff_cache", "build", "dist"}

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """The text without fenced blocks and code spans (links there are examples, not links)."""
    return CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, with GitHub's `-1`, `-2` for repeats."""
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(path: Path) -> tuple[list[str], int]:
    """(the broken relative links of a Markdown file, each with why; how many were checked)."""
    broken = []
    checked = 0
    for target in LINK.findall(prose(path.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        checked += 1
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no file {os.path.relpath(linked, path.parent)}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    return broken, checked


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    broken, _ = broken_links(path)
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_documents_link_to_each_other() -> None:
    """The references exist and are linked: a link pattern that matched nothing would make
    the test above pass vacuously."""
    for name in ("matching", "conventions", "otlp", "api", "operations"):
        assert (ROOT / "docs" / f"{name}.md").is_file(), name
    checked = sum(broken_links(path)[1] for path in DOCUMENTS)
    assert checked >= 40
    architecture = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for name in ("matching", "conventions", "otlp", "api", "operations"):
        assert f"(docs/{name}.md" in architecture, name
    # the README is where a user starts: it links every page of docs/ (it once never named
    # the expectation language's)
    readme = {target.partition("#")[0] for target in LINK.findall(
        prose((ROOT / "README.md").read_text(encoding="utf-8")))}
    unlinked = sorted(p.name for p in (ROOT / "docs").glob("*.md")
                      if f"docs/{p.name}" not in readme)
    assert not unlinked, f"README.md links no {unlinked}"


def test_the_checker_finds_a_broken_link_and_a_missing_anchor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## A `code` heading, twice\n\n"
                                       "## A `code` heading, twice\n", encoding="utf-8")
    page.write_text(
        "# Page\n[ok](other.md#a-code-heading-twice-1) [self](#page) [web](https://x.y/z)\n"
        "[gone](missing.md) [bad anchor](other.md#nowhere)\n"
        "`[in code](missing.md)`\n```\n[in a block](missing.md)\n```\n",
        encoding="utf-8",
    )
    broken, checked = broken_links(page)
    assert checked == 4
    assert [b.split(":")[0] for b in broken] == ["missing.md", "other.md#nowhere"]


def named_paths(text: str) -> set[str]:
    """Repository paths a document names in code spans (`collector/worker.py`,
    `collector/api/app.py: create_app`), under a top-level folder of the repository."""
    tops = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}
    out = set()
    for span in re.findall(r"`([^`\n]+)`", FENCE.sub("", text)):
        for token in re.split(r"[\s:,()]+", span):
            head = token.split("/", 1)[0]
            if "/" in token and head in tops and not re.search(r"[A-Z]{3,}|[{}*<>]", token):
                out.add(token.rstrip("."))
    return out


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_named_repository_path_exists(path: Path) -> None:
    """ARCHITECTURE.md's "where to change what" and the references name files to touch: each
    must exist, so that a rename cannot leave a newcomer following a dead path."""
    named = named_paths(path.read_text(encoding="utf-8"))
    ignored = set((ROOT / ".gitignore").read_text(encoding="utf-8").split())  # files you create
    missing = sorted(p for p in named if not (ROOT / p).exists() and p not in ignored)
    assert not missing, f"{path.relative_to(ROOT)} names missing paths: {missing}"
    if path.name == "ARCHITECTURE.md":
        assert len(named) >= 20


def repository_files() -> list[Path]:
    """Every text file of the repository (not virtual environments, caches or .git)."""
    out = []
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts):
            continue
        if path.is_file() and path.stat().st_size < 4 * 1024 * 1024:
            data = path.read_bytes()
            if b"\0" not in data:
                out.append(path)
    return out


def test_no_file_cites_the_design_pack_as_if_it_were_here() -> None:
    offenders = []
    files = repository_files()
    for path in files:
        if path == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for name in (*PACK, PACK_DIR):
            if name in text:
                offenders.append(f"{path.relative_to(ROOT)} cites {name}")
        offenders.extend(f"{path.relative_to(ROOT)} cites {m.group(0)} (outside the repository)"
                         for m in OUTSIDE.finditer(text))
    assert len(files) > 100  # the walk found the repository
    assert not offenders, "; ".join(offenders) + " (cite docs/ or ARCHITECTURE.md)"


def test_operations_lists_every_setting_and_command_flags_as_the_cli_has_them() -> None:
    """docs/operations.md's settings table names every Settings field, and its commands table
    names exactly the settings each command offers (collector.cli's registry)."""
    from tooltrail.collector.cli import ALL, registry
    from tooltrail.collector.config import Settings

    text = (ROOT / "docs" / "operations.md").read_text()
    rows = {line.split("|")[1].strip().strip("`") for line in text.splitlines()
            if line.startswith("| `")}
    assert set(Settings.model_fields) <= rows, set(Settings.model_fields) - rows
    for name, command in registry().commands.items():
        if not command.settings or command.settings == ALL:
            continue
        (row,) = [line for line in text.splitlines()
                  if re.match(rf"\| `tooltrail {re.escape(name)}[` ]", line)]
        listed = {part.strip().strip("`") for part in row.split("|")[3].split(",")}
        assert listed == set(command.settings), (name, listed ^ set(command.settings))
