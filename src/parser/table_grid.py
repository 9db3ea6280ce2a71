"""A table's grid from the words inside its region: rows, columns, header, cells.

Rows are words on one line; cells are words closer than a column gap; columns are those of the
rows that most often share one cell count; the header is what stands above the first full rule
inside the table (else its first row), a group label spanning the columns it is centred over or
underlined across. A table ruled all over (a rule between every row and every column) is read cell
by cell instead, so text that wraps inside a cell stays in its cell.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise

from .rules import Rule, VRule
from .text import normalize

Rect = tuple[float, float, float, float]


@dataclass
class Word:
    x0: float
    y0: float
    x1: float
    y1: float
    text: str

    @property
    def height(self) -> float:
        return self.y1 - self.y0


@dataclass
class Row:
    words: list[Word] = field(default_factory=list)

    @property
    def y0(self) -> float:
        return min(w.y0 for w in self.words)

    @property
    def y1(self) -> float:
        return max(w.y1 for w in self.words)

    @property
    def x0(self) -> float:
        return min(w.x0 for w in self.words)

    @property
    def x1(self) -> float:
        return max(w.x1 for w in self.words)


@dataclass
class Cell:
    x0: float
    x1: float
    text: str


@dataclass
class Grid:
    """A table read from its words: column names, rows of cells, and where each row stands."""

    header: list[str]
    rows: list[list[str]]
    row_rects: list[Rect]
    header_rect: Rect | None


def read_grid(rect: Rect, rules: list[Rule], verticals: list[VRule], words: list[Word], ruled: bool) -> Grid | None:
    """Read the words inside `rect` as a table; None when they do not read as one.

    `rules` are the horizontal rules within the rect; `ruled` says the rect was found between rules,
    where a column of sentences is allowed (a term and its description).
    """
    x0, y0, x1, y1 = rect
    inside = [
        w
        for w in words
        if x0 - 1 <= (w.x0 + w.x1) / 2 <= x1 + 1 and y0 - 1 <= (w.y0 + w.y1) / 2 <= y1 + 1 and w.text.strip()
    ]
    if not inside:
        return None
    rows = _rows(inside)
    if len(rows) < 3:
        return None
    size = _median([w.height for w in inside]) / 1.2
    cells = [_cells(r, size) for r in rows]
    columns = _columns(cells)
    if columns is None or len(columns) < 2:
        return None
    # Full rules run from edge to edge (a cmidrule under a group label leaves the first columns out).
    full = _distinct(sorted(r.y for r in rules if r.x0 <= x0 + 0.05 * (x1 - x0) and r.x1 >= x1 - 0.05 * (x1 - x0)))
    grid = _ruled_grid(rect, full, verticals, rows, len(columns))
    if grid is None:
        n_head = _header_rows(rows, cells, full, len(columns))
        header = _header(rows[:n_head], cells[:n_head], columns, rules)
        body = [_place(row, columns) for row in cells[n_head:]]
        rects = [(r.x0, r.y0, r.x1, r.y1) for r in rows[n_head:]]
        body, rects = _fill_groups(body, rects, rows[n_head:], full)
        grid = Grid(header, body, rects, _bounds(rows[:n_head]) if n_head else None)
    # A float's link under the table ("https://doi.org/...t003") is no row of it.
    kept = [i for i, r in enumerate(grid.rows) if not (sum(map(bool, r)) == 1 and _LINK.match(" ".join(r).strip()))]
    if len(kept) < len(grid.rows):
        grid = Grid(grid.header, [grid.rows[i] for i in kept], [grid.row_rects[i] for i in kept], grid.header_rect)
    # A column with no cell below the header is an artifact of the header's layout (a label wider than its
    # column, a bar around a symbol): its name already stands over its neighbour.
    keep = [j for j in range(len(grid.header)) if any(j < len(r) and r[j] for r in grid.rows)]
    if len(keep) < len(grid.header):
        grid = Grid(
            [grid.header[j] for j in keep], [[r[j] for j in keep] for r in grid.rows], grid.row_rects, grid.header_rect
        )
    return grid if _plausible(grid.rows, len(grid.header), ruled) else None


def _distinct(ys: list[float], tolerance: float = 2.0) -> list[float]:
    """Sorted positions with near-equal ones (a double rule) counted once."""
    out: list[float] = []
    for y in ys:
        if not out or y - out[-1] > tolerance:
            out.append(y)
    return out


def _union(a: Rect, b: Rect) -> Rect:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _bounds(rows: list[Row]) -> Rect:
    return (min(r.x0 for r in rows), min(r.y0 for r in rows), max(r.x1 for r in rows), max(r.y1 for r in rows))


def _ruled_grid(rect: Rect, full: list[float], verticals: list[VRule], rows: list[Row], n_columns: int) -> Grid | None:
    """A table ruled all over (a rule between every row, vertical rules between all `n_columns` columns the
    text shows) reads cell by cell: a cell's text may wrap onto several lines. None for any other table."""
    x0, y0, x1, y1 = rect
    height = y1 - y0
    reach: dict[float, float] = {}
    for v in verticals:
        if x0 - 2 <= v.x <= x1 + 2:
            key = round(v.x)
            reach[key] = reach.get(key, 0.0) + max(0.0, min(v.y1, y1) - max(v.y0, y0))
    xs = _distinct(sorted(x for x, length in reach.items() if length >= 0.5 * height))
    bands = list(pairwise(full))
    per_band = [[r for r in rows if a < (r.y0 + r.y1) / 2 < b] for a, b in bands]
    per_band = [rs for rs in per_band if rs]
    if len(xs) < 3 or len(per_band) < 3 or max(len(rs) for rs in per_band) > 4:
        return None
    edges = xs
    if min(r.x0 for r in rows) < edges[0] - 1:
        edges = [x0, *edges]
    if max(r.x1 for r in rows) > edges[-1] + 1:
        edges = [*edges, x1]
    spans = list(pairwise(edges))

    def filled(row: Row) -> set[int]:
        out: set[int] = set()
        for w in row.words:
            mid = (w.x0 + w.x1) / 2
            out.update(k for k, (a, b) in enumerate(spans) if a <= mid <= b)
        return out

    # Several lines in one band are one row whose cells wrap only when each later line leaves empty a
    # cell the first line fills (its row label aside); lines that fill the row are rows of their own.
    for band in per_band:
        first = filled(band[0]) - {0}
        if any(len(filled(row)) >= 2 and first <= filled(row) for row in band[1:]):
            return None
    table: list[list[str]] = []
    for band in per_band:
        cells = ["" for _ in spans]
        for row in band:
            for w in row.words:
                mid = (w.x0 + w.x1) / 2
                j = next((k for k, (a, b) in enumerate(spans) if a <= mid <= b), None)
                if j is not None:
                    cells[j] = f"{cells[j]} {w.text}".strip()
        table.append([normalize(c) for c in cells])
    keep = [j for j in range(len(spans)) if any(r[j] for r in table)]
    if len(keep) < n_columns:
        return None  # some columns have no rule between them: the rules do not draw the grid
    table = [[r[j] for j in keep] for r in table]
    rects = [_bounds(band) for band in per_band]
    return Grid(table[0], table[1:], rects[1:], rects[0])


def _median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2] if values else 10.0


def _rows(words: list[Word]) -> list[Row]:
    """Words on one line form a row: a word joins a row when its middle is within 0.4 of its height of
    the row's middle (word boxes can be taller than the line pitch, so boxes may overlap across rows)."""
    rows: list[Row] = []
    mids: list[float] = []
    for w in sorted(words, key=lambda w: ((w.y0 + w.y1) / 2, w.x0)):
        mid = (w.y0 + w.y1) / 2
        for n in range(len(rows) - 1, max(-1, len(rows) - 4), -1):
            if abs(mid - mids[n]) < 0.4 * min(w.height, _median([x.height for x in rows[n].words])):
                rows[n].words.append(w)
                mids[n] = _median([(x.y0 + x.y1) / 2 for x in rows[n].words])
                break
        else:
            rows.append(Row([w]))
            mids.append(mid)
    for row in rows:
        row.words.sort(key=lambda w: w.x0)
    rows.sort(key=lambda r: r.y0)
    return rows


def _cells(row: Row, size: float) -> list[Cell]:
    """Words closer than a column gap make one cell: a gap of half the type size is twice a space."""
    cells: list[Cell] = []
    for w in row.words:
        if cells and w.x0 - cells[-1].x1 < 0.55 * size:
            last = cells[-1]
            cells[-1] = Cell(last.x0, max(last.x1, w.x1), f"{last.text} {w.text}")
        else:
            cells.append(Cell(w.x0, w.x1, w.text))
    return [Cell(c.x0, c.x1, normalize(c.text)) for c in cells]


def _columns(rows: list[list[Cell]]) -> list[tuple[float, float]] | None:
    """Column intervals from the rows with the most common cell count (two or more)."""
    counts = Counter(len(r) for r in rows if len(r) >= 2)
    if not counts:
        return None
    k = max(counts, key=lambda n: (counts[n], n))
    model = [r for r in rows if len(r) == k]
    cols = [(min(r[j].x0 for r in model), max(r[j].x1 for r in model)) for j in range(k)]
    merged: list[tuple[float, float]] = []
    for c in cols:
        if merged and c[0] < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], c[1]))
        else:
            merged.append(c)
    # Rows with a cell outside every column (a wider table than the model rows show) add columns.
    for r in rows:
        for cell in r:
            if all(_overlap(cell, c) <= 0 for c in merged) and len(r) >= 2:
                merged.append((cell.x0, cell.x1))
                merged.sort()
    return merged


def _overlap(cell: Cell, col: tuple[float, float]) -> float:
    return min(cell.x1, col[1]) - max(cell.x0, col[0])


def _column_of(cell: Cell, columns: list[tuple[float, float]]) -> int:
    best = max(range(len(columns)), key=lambda j: _overlap(cell, columns[j]))
    if _overlap(cell, columns[best]) > 0:
        return best
    mid = (cell.x0 + cell.x1) / 2
    return min(range(len(columns)), key=lambda j: abs(mid - (columns[j][0] + columns[j][1]) / 2))


def _place(row: list[Cell], columns: list[tuple[float, float]]) -> list[str]:
    out = [""] * len(columns)
    for cell in row:
        j = _column_of(cell, columns)
        out[j] = f"{out[j]} {cell.text}".strip()
    return out


def _header_rows(rows: list[Row], cells: list[list[Cell]], full: list[float], k: int) -> int:
    """How many rows make the header: those above the first full-width rule inside the table (booktabs'
    midrule), else the first row with any rows of spanning group labels above it; then any row of names
    ("ALL SEQ ...") right under them, above rows of numbers."""
    n = 0
    inner = [y for y in full if rows[0].y0 + 1 < y < rows[-1].y1 - 1]
    if inner:
        above = sum(1 for r in rows if (r.y0 + r.y1) / 2 < inner[0])
        if 1 <= above <= 3 and above < len(rows) - 1:
            n = above
    if not n:
        n = 1
        while n < min(3, len(rows) - 2) and len(cells[n - 1]) < 0.6 * k:
            n += 1
    while n < min(3, len(rows) - 2) and _names(cells[n][1:]) and _numbers(cells[n + 1 :]):
        n += 1
    return n


def _names(cells: list[Cell]) -> bool:
    return len(cells) >= 2 and not any(is_number(c.text) for c in cells)


def _numbers(rows: list[list[Cell]]) -> bool:
    """Most cells of these rows, row labels aside, are numbers."""
    values = [c.text for r in rows for c in r[1:]]
    return bool(values) and sum(is_number(v) for v in values) >= 0.6 * len(values)


_LINK = re.compile(r"^(https?://|doi:)\S+$", re.I)
_NUMBER = re.compile(r"^[-+\u2212\u00b1~<>]?\(?[\d.,]+\)?[%*\u2020\u2021]?$")


def is_number(text: str) -> bool:
    """True for a numeric cell ("84.1", "-3", "12%", "1,057", "(19%)")."""
    return bool(_NUMBER.match(text.replace(" ", "")))


def _header(
    rows: list[Row], cells: list[list[Cell]], columns: list[tuple[float, float]], rules: list[Rule]
) -> list[str]:
    """Column names: the header cells over each column, top to bottom ("Top-20" over "NQ": "Top-20 NQ").

    A group label spans the columns its rule underlines (booktabs' cmidrule), else the run of columns
    it is centred over.
    """
    names = [""] * len(columns)
    width = columns[-1][1] - columns[0][0]
    partial = [r for r in rules if r.x1 - r.x0 < 0.9 * width]
    for row, row_cells in zip(rows, cells, strict=True):
        cores = [_core(c, columns) for c in row_cells]
        taken: set[int] = set()
        for n, cell in enumerate(row_cells):
            under = [
                r
                for r in partial
                if row.y1 - 1 <= r.y <= row.y1 + 0.8 * (row.y1 - row.y0)
                and r.x0 - 2 <= (cell.x0 + cell.x1) / 2 <= r.x1 + 2
                and r.x1 - r.x0 > cell.x1 - cell.x0
            ]
            if under:
                rx0, rx1 = under[0].x0, under[0].x1
                span = [j for j, c in enumerate(columns) if rx0 - 2 <= (c[0] + c[1]) / 2 <= rx1 + 2] or cores[n]
            else:
                claimed = taken | {j for m, core in enumerate(cores) if m != n for j in core}
                span = _centred_run(cell, columns, cores[n], claimed)
            taken.update(span)
            for j in span:
                names[j] = f"{names[j]} {cell.text}".strip()
    return names


def _core(cell: Cell, columns: list[tuple[float, float]]) -> list[int]:
    """The columns a cell stands over (the nearest one when it stands over none)."""
    core = [j for j, c in enumerate(columns) if _overlap(cell, c) > 0.3 * min(c[1] - c[0], cell.x1 - cell.x0)]
    return core or [_column_of(cell, columns)]


def _centred_run(cell: Cell, columns: list[tuple[float, float]], core: list[int], claimed: set[int]) -> list[int]:
    """The longest run of columns around `core`, free of other cells, that the cell is centred over."""
    mid = (cell.x0 + cell.x1) / 2
    best = core
    lo_core, hi_core = min(core), max(core)
    for a in range(lo_core, -1, -1):
        if a < lo_core and a in claimed:
            break
        for b in range(hi_core, len(columns)):
            if b > hi_core and b in claimed:
                break
            left, right = columns[a][0], columns[b][1]
            if b - a + 1 > len(best) and abs((left + right) / 2 - mid) <= max(3.0, 0.04 * (right - left)):
                best = list(range(a, b + 1))
    return best


def _fill_groups(
    grid: list[list[str]], rects: list[Rect], rows: list[Row], full: list[float]
) -> tuple[list[list[str]], list[Rect]]:
    """A first-column label set once for a group of rows ("Single" beside its two rows) goes to each row
    of the group: the rows between two rules, or without rules the rows below it up to the next label.
    A label on a row of its own then goes."""
    group = [sum(1 for y in full if y < (r.y0 + r.y1) / 2) for r in rows]
    drop: set[int] = set()
    for g in sorted(set(group)) if full else []:
        members = [i for i in range(len(grid)) if group[i] == g]
        labelled = [i for i in members if grid[i][0]]
        if len(labelled) == 1 and len(members) > 1:
            label = grid[labelled[0]][0]
            for i in members:
                grid[i][0] = label
            if not any(grid[labelled[0]][1:]):
                drop.add(labelled[0])
                for i in members:  # each row's box takes in the label it now holds
                    rects[i] = _union(rects[i], rects[labelled[0]])
    if not full:
        for i, row in enumerate(grid):
            if row[0] and not any(row[1:]) and i + 1 < len(grid) and not grid[i + 1][0]:
                j = i + 1
                while j < len(grid) and not grid[j][0]:
                    grid[j][0] = row[0]
                    rects[j] = _union(rects[j], rects[i])
                    j += 1
                drop.add(i)
    keep = [i for i in range(len(grid)) if i not in drop]
    return [grid[i] for i in keep], [rects[i] for i in keep]


def _plausible(rows: list[list[str]], k: int, ruled: bool) -> bool:
    """Reads as a table: two rows or more, most cells filled, cells short. Between a table's rules a
    column of sentences is fine (a term and its description); without rules it is body text."""
    if len(rows) < 2 or k < 2:
        return False
    cells = [c for r in rows for c in r]
    filled = [c for c in cells if c]
    if len(filled) < 0.5 * len(cells):
        return False
    words = sum(len(c.split()) for c in filled) / max(1, len(filled))
    if ruled:
        return words <= 12
    sentences = sum(1 for c in filled if len(c.split()) >= 6 and sum(w[:1].islower() for w in c.split()) >= 3)
    return words <= 8 and sentences <= 0.2 * len(filled)
