"""mkdocs hook: the docs pages link repository files outside docs/ by their
relative path (``../native/include/adil/adil.h``), which works when the
pages are read in the repository.  The site has no such files, and mkdocs
--strict refuses a link it cannot resolve, so this hook copies each linked
repository file into the site under ``repo/`` and points the link there.
A link to a file that does not exist is left alone, for mkdocs to report."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

# [text](target) or [text](target#anchor), relative targets only
LINK = re.compile(r"(\]\()([^)\s#:]+)(#[^)\s]*)?\)")
SITE_DIR = "repo"


def _outside_target(docs_dir: Path, page_uri: str, target: str) -> str | None:
    """The repository path of `target` when it leaves docs/ and exists."""
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(page_uri), target))
    if not joined.startswith("../") or joined.startswith("../../"):
        return None
    relative = joined[3:]
    return relative if (docs_dir.parent / relative).is_file() else None


def _links(files: Files, docs_dir: Path) -> set[str]:
    found = set()
    for page in files.documentation_pages():
        if page.abs_src_path is None:
            continue
        text = Path(page.abs_src_path).read_text(encoding="utf-8")
        for _, target, _ in LINK.findall(text):
            relative = _outside_target(docs_dir, page.src_uri, target)
            if relative is not None:
                found.add(relative)
    return found


def on_files(files: Files, config: Any) -> Files:
    docs_dir = Path(config["docs_dir"]).resolve()
    for relative in sorted(_links(files, docs_dir)):
        files.append(File.generated(config, f"{SITE_DIR}/{relative}",
                                    abs_src_path=str(docs_dir.parent / relative)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    docs_dir = Path(config["docs_dir"]).resolve()
    depth = page.file.src_uri.count("/")

    def repoint(match: re.Match[str]) -> str:
        opening, target, anchor = match.group(1), match.group(2), match.group(3) or ""
        relative = _outside_target(docs_dir, page.file.src_uri, target)
        if relative is None:
            return match.group(0)
        return f"{opening}{'../' * depth}{SITE_DIR}/{relative}{anchor})"

    return LINK.sub(repoint, markdown)
