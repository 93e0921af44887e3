"""The errors of bad input, raised by the library's readers and parsers (``routeplan.files``,
``routeplan.parsing``); the command line reports each as one line on stderr with its exit code.

* ``UsageError`` (exit 2, as argparse): a bad command-line value — a flag, a ``K=V`` spec, a
  strategy name, a number out of range.
* ``InputError`` (exit 1): an input file that is missing, unreadable, not UTF-8 or malformed;
  the message names the file (``path:line:`` when the line is known).
* ``OutputError`` (exit 1): a result that cannot be written as asked (a non-finite number in
  JSON output).

Both ``UsageError`` and ``InputError`` are ``ValueError``\\ s, so library callers that catch
``ValueError`` keep working. ``one_line`` shortens any error text to one line for a report.
"""

from __future__ import annotations

__all__ = ["InputError", "OutputError", "UsageError", "one_line"]


class UsageError(ValueError):
    """A bad command-line value; ``prog`` names the (sub)command when argparse found it."""

    def __init__(self, message: str, prog: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog


class InputError(ValueError):
    """An input file that cannot be used; the message starts with the file (and line)."""


class OutputError(RuntimeError):
    """A result that cannot be written as asked."""


def one_line(error: object, limit: int = 200) -> str:
    """``error``'s text as one line (its lines joined by ``; ``) of at most ``limit`` characters."""
    text = "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return text if len(text) <= limit else text[: limit - 1] + "…"
