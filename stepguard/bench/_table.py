"""A titled table rendered to both Markdown and HTML: what the report and the suite's tables are made of."""

from __future__ import annotations

import html
from dataclasses import dataclass

__all__ = ["Table"]


def _md_line(text: str) -> str:
    """``text`` on one Markdown line: line breaks as ``<br>``."""
    return "<br>".join(text.splitlines()) if "\n" in text or "\r" in text else text


def _md_cell(text: str) -> str:
    """``text`` as one cell of a Markdown table: ``|`` escaped, line breaks as ``<br>``."""
    return _md_line(text.replace("|", "\\|"))


@dataclass
class Table:
    """A titled table rendered to both Markdown and HTML."""

    title: str
    header: list[str]
    rows: list[list[str]]

    def markdown(self) -> str:
        """The table as GitHub-flavoured Markdown under a ``###`` title; a cell's ``|`` escaped and its
        line breaks written ``<br>``, so a value with either (an input, a model's answer) stays in its cell."""
        lines = [f"### {_md_line(self.title)}", "", "| " + " | ".join(map(_md_cell, self.header)) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(map(_md_cell, r)) + " |" for r in self.rows]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        """The table as an HTML ``<table>`` under an ``<h3>`` title (escaped)."""
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        return f"<h3>{html.escape(self.title)}</h3>\n<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n"
