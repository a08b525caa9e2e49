"""MkDocs hooks: pages that live outside docs/, and links that work in both places.

The Markdown files are written to be read on GitHub, where a link is a
path in the repository. The site holds docs/ only, so:

- benchmarks/README.md, the owner of the measurements, becomes the page
  `benchmarks.md`, and README.md and CONTRIBUTING.md the pages `readme.md`
  and `contributing.md` (outside the navigation: the site's home is
  docs/index.md); each is made from its file at every build, one copy;
- a link to a file outside docs/ is rewritten to what the site has: one of
  those pages, or for any other file (a results JSON, an example script) a
  copy of it, placed at its path in the repository;
- every other link is left to MkDocs, whose `--strict` build fails on one that
  points nowhere (anchors included).

It also holds the griffe extension that reads the docstrings' doctests.
"""

import os
import posixpath
import re

import griffe
from mkdocs.structure.files import File, InclusionLevel

_LINK = re.compile(r"(\]\()([^)\s]+)(\))")
# Files outside docs/ that the site shows as a page of its own, and where.
_PAGES = {
    "benchmarks/README.md": "benchmarks.md",
    "README.md": "readme.md",
    "CONTRIBUTING.md": "contributing.md",
}
_IN_NAV = {"benchmarks.md"}
# A Google section's title, e.g. "Args:", "Call arguments:".
_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:$")


def _repository(config):
    return os.path.dirname(os.path.abspath(config["docs_dir"]))


def _docs_folder(config):
    return os.path.basename(os.path.abspath(config["docs_dir"]))


def on_files(files, config):
    """Adds the pages made from files outside docs/."""
    for path, page in _PAGES.items():
        path = os.path.join(_repository(config), path)
        if not os.path.isfile(path):
            continue  # a link to it fails the build, naming it
        with open(path, encoding="utf-8") as f:
            content = f.read()
        inclusion = (
            InclusionLevel.UNDEFINED if page in _IN_NAV else InclusionLevel.NOT_IN_NAV
        )
        files.append(File.generated(config, page, content=content, inclusion=inclusion))
    return files


def on_page_markdown(markdown, page, config, files):
    """Rewrites the page's links to files outside docs/."""
    repository = _repository(config)
    docs = _docs_folder(config)
    generated = {site: path for path, site in _PAGES.items()}
    source = generated.get(page.file.src_uri, f"{docs}/{page.file.src_uri}")
    page_folder = posixpath.dirname(page.file.src_uri)

    def rewrite(match):
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):
            return match.group(0)  # a URL, an anchor on the page, a site path
        path, _, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        if resolved.startswith(docs + "/"):
            site_path = resolved[len(docs) + 1 :]  # a page of the site
        elif resolved in _PAGES:
            site_path = _PAGES[resolved]
        elif not resolved.endswith(".md") and os.path.isfile(
            os.path.join(repository, resolved)
        ):
            site_path = resolved  # a copy of the file, at its repository path
            if files.get_file_from_path(site_path) is None:
                files.append(
                    File.generated(
                        config,
                        site_path,
                        abs_src_path=os.path.join(repository, resolved),
                    )
                )
        else:
            return match.group(0)  # nowhere: MkDocs says so
        link = posixpath.relpath(site_path, page_folder or ".")
        if anchor:
            link += "#" + anchor
        return match.group(1) + link + match.group(3)

    return _LINK.sub(rewrite, markdown)


class DoctestExamples(griffe.Extension):
    """Griffe: reads the docstrings' two sections that Google style lacks.

    The package's docstrings write their doctests flush left under
    `Example:` and a blank line, as Keras's do; Google style wants a
    section's lines indented under its title. Here they are indented up to
    the next section title (a line ending in a colon after a blank line) or
    the docstring's end, and the title becomes `Examples:`, so the examples
    render as code. The items of a layer's `Call arguments:` (`name: text`)
    become a list.
    """

    def on_instance(self, *, obj, **kwargs):
        docstring = obj.docstring
        if docstring is None:
            return
        lines = docstring.value.split("\n")
        if "Call arguments:" in lines:
            lines = _call_arguments_as_list(lines)
        if "Example:" in lines:
            lines = _examples_indented(lines)
        docstring.value = "\n".join(lines)


def _section_end(lines, start):
    """The index after the section whose title is lines[start]."""
    end = start + 1
    while end < len(lines):
        if lines[end - 1] == "" and _SECTION.match(lines[end]):
            break
        end += 1
    return end


def _examples_indented(lines):
    start = lines.index("Example:")
    if lines[start + 1 : start + 2] != [""]:
        return lines  # already indented, or not doctests
    end = _section_end(lines, start)
    body = [f"    {line}" if line else "" for line in lines[start + 2 : end]]
    return [*lines[:start], "Examples:", *body, *lines[end:]]


def _call_arguments_as_list(lines):
    """`Call arguments:` items (`name: text`) as a Markdown list."""
    start = lines.index("Call arguments:")
    end = _section_end(lines, start)
    item = re.compile(r"^    (\w+): ")
    body = [item.sub(r"    - `\1`: ", line) for line in lines[start + 1 : end]]
    return [*lines[: start + 1], *body, *lines[end:]]
