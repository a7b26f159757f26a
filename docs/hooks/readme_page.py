"""mkdocs hook: the repository's README.md as the site's ``overview.md`` page, and links that leave
``docs/`` made fit for the site.

The pages are written for readers of the repository first: ``docs/index.md`` links
``../README.md``, ``docs/examples.md`` links ``../examples/*.py``. On the site the README is a page
of its own, its ``docs/...`` links pointed at the site's pages; a link to any other repository
file (not a page of the site) keeps its text and loses its target. ``tests/test_docs.py`` checks
that every such link leads to a file of the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

PAGE = "overview.md"
#: a Markdown link or image: ``[text](target)``, ``![alt](target)``
LINK = re.compile(r"(?P<image>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
#: a target the site resolves as it is: a scheme (https:) or an anchor of the same page
EXTERNAL = re.compile(r"^([a-z][a-z0-9+.-]*:|#)")


def _text_only(match: re.Match[str]) -> str:
    return match.group("text")


def _readme_link(match: re.Match[str]) -> str:
    """A README link as the site needs it: ``docs/x.md`` is the site's ``x.md``."""
    target = match.group("target")
    if EXTERNAL.match(target):
        return match.group(0)
    if target.startswith("docs/"):
        return f"{match.group('image')}[{match.group('text')}]({target.removeprefix('docs/')})"
    return _text_only(match)


def _page_link(match: re.Match[str]) -> str:
    """A link of a page in ``docs/``, the site's ``overview.md`` for ``../README.md``."""
    target = match.group("target")
    if target.startswith("../README.md"):
        return f"{match.group('image')}[{match.group('text')}]({PAGE}{target[12:]})"
    return _text_only(match) if target.startswith("../") else match.group(0)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    readme = Path(config.config_file_path).parent / "README.md"
    content = LINK.sub(_readme_link, readme.read_text(encoding="utf-8"))
    files.append(File.generated(config, PAGE, content=content))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if page.file.src_uri == PAGE or "/" in page.file.src_uri:
        return markdown  # the README is done; the reference pages link within docs/
    return LINK.sub(_page_link, markdown)
