"""Tables of values: a rich table that fits its console, and the same table as markdown, CSV or JSON.

A :class:`DataTable` is a rich ``Table`` that keeps the raw values of its cells:

- on a console it fits the console's width: numbers are written compactly (:func:`compact`) and
  are never split; names and other text wrap (between words, else inside a long word) but are
  never cut; headers wrap between words. When even the narrowest columns do not fit, the table is
  printed as several tables, each with the row-naming key column(s) and as many others as fit;
- :func:`markdown`, :func:`csv_text` and :func:`json_rows` write the raw values for a paper or a
  spreadsheet (``--format markdown|csv|json``).

The console's width is the terminal's; for piped output, ``COLUMNS`` or :data:`PIPED_WIDTH`.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
from typing import Any, Sequence
from rich.console import Console
from rich.table import Table
from rich.text import Text

FORMATS = ("rich", "markdown", "csv", "json")
PIPED_WIDTH = 100  # columns of output that is not a terminal, unless COLUMNS says otherwise
READABLE = 40  # a split table keeps text columns at least this wide where their text is longer
WORD_LIMIT = 16  # a word of text longer than this may be folded to let its column narrow
DIGITS = 4  # significant digits of a number on the terminal and in markdown
_PREFIXES = {-8: "y", -7: "z", -6: "a", -5: "f", -4: "p", -3: "n", -2: "µ", -1: "m",
             1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E", 7: "Z", 8: "Y"}


def console(stderr: bool = False, piped_width: int = PIPED_WIDTH, follow_columns: bool = True) -> Console:
    """A rich console: the terminal's width, else ``COLUMNS`` (unless not ``follow_columns``),
    else ``piped_width`` columns."""
    stream = sys.stderr if stderr else sys.stdout
    columns = follow_columns and os.environ.get("COLUMNS", "").isdigit()
    width = None if stream.isatty() or columns else piped_width
    return Console(stderr=stderr, highlight=False, markup=False, width=width)


def is_number(value: Any) -> bool:
    """A real number (numpy's too, whose bool is not one), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def compact(value: Any) -> str:
    """A value as a short cell: whole numbers in full (``20,000``); other numbers with
    :data:`DIGITS` significant digits, plain between 0.001 and 10,000 (``0.1465``, ``8,025``),
    else with an SI prefix (``27.57µ``, ``148.9M``; the unit is in the column's header), else in
    scientific notation; a missing value (None, NaN) as ``-``; anything else as text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if not is_number(value):
        return str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    value = float(value)
    if math.isinf(value) or value == 0:
        return str(value) if value else "0"
    if 1e-3 <= abs(value) < 1e4:
        return f"{value:,.{DIGITS}g}"
    power = math.floor(math.log10(abs(value)) / 3)
    mantissa = float(f"{value / 1000.0 ** power:.{DIGITS}g}")
    if abs(mantissa) >= 1000:  # rounding reached the next prefix: 999.96k is 1M
        power, mantissa = power + 1, mantissa / 1000
    if power not in _PREFIXES:
        return f"{value:.{DIGITS - 1}e}"
    return f"{mantissa:.{DIGITS}g}{_PREFIXES[power]}"


class DataTable(Table):
    """A rich table of raw values (``headers`` and ``rows``) that fits the console it is printed
    on; the first ``keys`` columns name a row and are repeated when the table must be split."""

    def __init__(self, title: str | None, headers: Sequence[str], rows: Sequence[Sequence[Any]], *,
                 caption: str | None = None, keys: int = 1, show_header: bool = True,
                 justify: Sequence[str] | None = None, widths: Sequence[int] | None = None) -> None:
        super().__init__(title=title, caption=caption, show_header=show_header)
        self.headers, self.values, self.keys = list(headers), [list(row) for row in rows], keys
        self.justify = list(justify) if justify else [
            "right" if any(is_number(row[i]) for row in self.values) and
            all(is_number(row[i]) or row[i] is None for row in self.values) else "left"
            for i in range(len(self.headers))]
        for index, header in enumerate(self.headers):
            self.add_column(header, justify=self.justify[index], overflow="fold",
                            width=widths[index] if widths else None)
        for row in self.values:
            self.add_row(*(Text(compact(value)) for value in row))

    def _extent(self, index: int) -> tuple[int, int]:
        """(narrowest, natural) width of a column: a number is never split, a word of text only
        beyond :data:`WORD_LIMIT` characters, a header only between words."""
        header = self.headers[index] if self.show_header else ""
        texts = [compact(row[index]) for row in self.values]
        least = max((len(word) for word in header.split()), default=1)
        for value, text in zip((row[index] for row in self.values), texts):
            least = max(least, len(text) if is_number(value) else
                        min(max((len(w) for w in text.split()), default=1), WORD_LIMIT))
        natural = max([len(header), *(len(t) for t in texts)] or [1])
        return least, max(least, natural)

    def _part(self, columns: list[int], widths: list[int] | None, title: str | None, caption: str | None):
        return DataTable(title, [self.headers[i] for i in columns], [[row[i] for i in columns] for row in self.values],
                         caption=caption, keys=min(self.keys, len(columns)), show_header=self.show_header,
                         justify=[self.justify[i] for i in columns], widths=widths)

    def __rich_console__(self, console, options):
        if any(column.width is not None for column in self.columns) or not self.headers:
            yield from super().__rich_console__(console, options)  # already fitted
            return
        width = options.max_width
        extents = [self._extent(i) for i in range(len(self.headers))]
        frame = 3 * len(extents) + 1  # a border and one space either side per column, one closing border
        if sum(n for _, n in extents) + frame <= width:
            yield from super().__rich_console__(console, options)
        elif sum(least for least, _ in extents) + frame <= width:
            yield self._part(list(range(len(extents))), _share(extents, width - frame), self.title, self.caption)
        else:
            yield from self._split(extents, width)

    def _split(self, extents: list[tuple[int, int]], width: int):
        """Several tables, each with the key columns and the next columns that fit at a readable
        width (a text column keeps :data:`READABLE` characters where it has them)."""
        keys = list(range(min(self.keys, len(extents) - 1)))
        readable = [min(high, max(low, READABLE)) for low, high in extents]
        groups, group = [], []
        for index in range(len(keys), len(extents)):
            trial = keys + group + [index]
            if group and sum(readable[i] for i in trial) + 3 * len(trial) + 1 > width:
                groups.append(group)
                group = []
            group.append(index)
        groups.append(group)
        for number, group in enumerate(groups, 1):
            columns = keys + group
            frame = 3 * len(columns) + 1
            chosen = [(readable[i], extents[i][1]) for i in columns]  # the group was packed at readable widths
            widths = _share(chosen, width - frame) if sum(n for _, n in chosen) + frame > width else None
            title = f"{self.title or 'table'} ({number}/{len(groups)})"
            yield self._part(columns, widths, title, self.caption if number == len(groups) else None)


def _share(extents: list[tuple[int, int]], room: int) -> list[int]:
    """Column widths that fit ``room``: every column at its natural width, then the widest ones
    narrowed one character at a time (never below their narrowest), so short columns stay whole;
    if even the narrowest do not fit, all in proportion."""
    least = [low for low, _ in extents]
    if sum(least) > room:  # not even the narrowest fit (one column group too wide): squeeze all
        return [max(1, low * room // sum(least)) for low in least]
    widths = [high for _, high in extents]
    while sum(widths) > room:
        widest = max((i for i in range(len(widths)) if widths[i] > least[i]), key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


def markdown(table: DataTable) -> str:
    """A table as a GitHub markdown table (numbers as on the terminal), its title as a heading."""
    def escape(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    align = {"right": "---:", "center": ":---:"}
    lines = [f"**{escape(str(table.title))}**", ""] if table.title else []
    headers = table.headers if table.show_header else [""] * len(table.headers)
    lines += ["| " + " | ".join(map(escape, headers)) + " |",
              "|" + "|".join(align.get(j, "---") for j in table.justify) + "|"]
    lines += ["| " + " | ".join(escape(compact(value)) for value in row) + " |" for row in table.values]
    if table.caption:
        lines += ["", f"*{escape(str(table.caption))}*"]
    return "\n".join(lines) + "\n"


def csv_text(table: DataTable) -> str:
    """A table as CSV with full-precision numbers, a comment line ``# title`` first."""
    import csv
    import io

    stream = io.StringIO()
    if table.title:
        stream.write(f"# {table.title}\n")
    writer = csv.writer(stream, lineterminator="\n")
    if table.show_header:
        writer.writerow(table.headers)
    writer.writerows([("" if v is None else v) for v in row] for row in table.values)
    return stream.getvalue()


def json_rows(table: DataTable) -> dict[str, Any]:
    """A table as ``{"title", "columns", "rows"}`` with full-precision values (NaN as null)."""
    from optmap.output import plain

    return {"title": table.title, "columns": table.headers, "rows": plain(table.values),
            **({"caption": table.caption} if table.caption else {})}


def write(tables: Sequence[DataTable | None], form: str, terminal: Console) -> None:
    """Print ``tables`` (None ones skipped) on ``terminal`` (``rich``), or on standard output as
    markdown, CSV blocks separated by a blank line, or one JSON list."""
    tables = [t for t in tables if t is not None]
    if form == "rich":
        for table in tables:
            terminal.print(table)
    elif form == "json":
        from optmap.output import json_text

        sys.stdout.write(json_text([json_rows(t) for t in tables]) + "\n")
    else:
        render = markdown if form == "markdown" else csv_text
        sys.stdout.write("\n".join(render(t) for t in tables))
    sys.stdout.flush()
