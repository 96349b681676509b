"""The report's figures as SVG: grouped horizontal and vertical bars and lines over time, with axes, round
ticks, grid lines and a legend, written as text here. matplotlib drew them as PNGs before; its import and
rendering were ~1.1 of a 1 GB `kcodec analyze`'s ~10.8 CPU s on two cores (the import in a thread while the
JVM started, the drawing in two processes at the end), where these take milliseconds. An SVG scales, can
be searched and diffed, and shows wherever report.md does (browsers, GitHub, mkdocs). Every bar and point
has a tooltip (``<title>``) with its exact value. No font metrics here: a label's width is estimated from
its length, and labels past ``MAX_LABEL`` characters are shortened (their tooltip has them whole)."""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence


def escape(text: str) -> str:
    """``&``, ``<`` and ``>`` as XML entities, as ``xml.sax.saxutils.escape`` makes them: that module imports
    ``urllib.request`` (about 0.06 s, at the end of the command, for these three)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


Series = tuple[str, Sequence[Optional[float]]]  # a legend name and one value per category (or per x)

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf", "#393b79", "#637939")
FONT = 12  # px
CHAR = 0.6  # a character's estimated width, in em
MAX_LABEL = 48
WIDTH = 900
BAR = 12  # px a bar across, in a group of bars
LEGEND = 22  # px a legend row


def ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values from at or below ``lo`` to the first at or above ``hi``, about ``n`` steps of 1, 2 or
    5 times a power of ten."""
    if not hi > lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw * (1 - 1e-9))
    first = math.floor(lo / step + 1e-9) * step
    out = [first]
    while out[-1] < hi - step * 1e-9:
        out.append(first + step * len(out))
    return out


def number(v: float) -> str:
    """A tick's value, short: 1.5k, 20M, 3G; 0.25; 7."""
    a = abs(v)
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= scale:
            return f"{v / scale:.4g}{suffix}"
    return str(int(v)) if float(v).is_integer() else f"{v:.4g}"


def _exact(v: Optional[float]) -> str:
    if v is None or not math.isfinite(v):
        return "none" if v is None else str(v)
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _num(v: Optional[float]) -> float:
    """A value as drawn: None and NaN or infinite values as 0 (their tooltips say what they were)."""
    return v if v is not None and math.isfinite(v) else 0.0


def _top(series: Sequence[Series]) -> float:
    return max([_num(v) for _, vs in series for v in vs] or [1])


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[:MAX_LABEL - 1] + "\u2026"


def _width(text: str, size: int = FONT) -> float:
    return len(text) * size * CHAR


class _Doc:
    """An SVG document built as a list of elements."""

    def __init__(self, width: float, height: float, title: str) -> None:
        self.parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
                      f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans, Arial, sans-serif" '
                      f'font-size="{FONT}">', f"<title>{escape(title)}</title>",
                      f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>']

    def line(self, x1: float, y1: float, x2: float, y2: float, color: str = "#000000") -> None:
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}"/>')

    def rect(self, x: float, y: float, w: float, h: float, color: str, tip: Optional[str] = None) -> None:
        body = f"<title>{escape(tip)}</title>" if tip else ""
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" '
                          f'fill="{color}">{body}</rect>')

    def text(self, x: float, y: float, s: str, anchor: str = "start", size: int = FONT,
             rotate: Optional[float] = None) -> None:
        turn = f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"' if rotate is not None else ""
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{turn}>'
                          f"{escape(s)}</text>")

    def legend(self, names: Sequence[str], x: float, y: float, across: bool = False) -> None:
        """A colour swatch and a name for each series from (x, y): one row a name, or side by side (``across``)."""
        for i, name in enumerate(names):
            self.rect(x, y + 3, 14, 10, COLORS[i % len(COLORS)])
            self.text(x + 20, y + 12, _short(name), size=FONT - 1)
            if across:
                x += 34 + _width(_short(name), FONT - 1)
            else:
                y += LEGEND

    def grid(self, axis: Sequence[float], at: Callable[[float], float], lo: float, hi: float, vertical: bool) -> None:
        """A grid line and a tick label for each tick: at x = at(t) from y lo to hi (``vertical``), or at
        y = at(t) from x lo to hi, labelled left of lo."""
        for t in axis:
            if vertical:
                self.line(at(t), lo, at(t), hi, "#dddddd")
                self.text(at(t), hi + 16, number(t), "middle", FONT - 1)
            else:
                self.line(lo, at(t), hi, at(t), "#dddddd")
                self.text(lo - 5, at(t) + 4, number(t), "end", FONT - 1)

    def axes(self, left: float, top: float, bottom: float, right: float) -> None:
        self.line(left, top, left, bottom)
        self.line(left, bottom, right, bottom)

    def done(self) -> str:
        return "\n".join([*self.parts, "</svg>"]) + "\n"


def _legend_width(series: Sequence[Series]) -> float:
    return 28 + max(_width(_short(name), FONT - 1) for name, _ in series)


def hbars(labels: Sequence[str], series: Sequence[Series], xlabel: str, title: str) -> str:
    """A horizontal bar per label and series, the labels top to bottom in the order given; a legend when there
    is more than one series."""
    k = max(1, len(series))
    shown = [_short(lab) for lab in labels]
    left = 14 + max([_width(s, FONT - 1) for s in shown] or [0])
    legend = _legend_width(series) + 10 if len(series) > 1 else 0
    group = 8 + BAR * k
    top = 12
    plot_w = WIDTH - left - 20 - legend
    height = top + group * max(1, len(labels)) + 48
    doc = _Doc(WIDTH, height, title)
    axis = ticks(0, _top(series))
    scale = plot_w / axis[-1] if axis[-1] else 0
    bottom = top + group * max(1, len(labels))
    doc.grid(axis, lambda t: left + t * scale, top, bottom, vertical=True)
    for i, (label, short) in enumerate(zip(labels, shown)):
        y = top + i * group + 4
        doc.text(left - 6, y + BAR * k / 2 + 4, short, "end", FONT - 1)
        for j, (name, values) in enumerate(series):
            v = values[i]
            doc.rect(left, y + j * BAR, _num(v) * scale, BAR - 1, COLORS[j % len(COLORS)],
                     f"{label}{': ' + name if len(series) > 1 else ''}: {_exact(v)}")
    doc.axes(left, top, bottom, left + plot_w)
    doc.text(left + plot_w / 2, bottom + 38, xlabel, "middle")
    if len(series) > 1:
        doc.legend([name for name, _ in series], WIDTH - legend, top)
    return doc.done()


def vbars(panels: Sequence[tuple[Sequence[str], Sequence[Series], str, str]], title: str) -> str:
    """Panels side by side, each (categories, series, xlabel, ylabel): a vertical bar per category and series,
    the categories' labels turned, a legend in each panel with more than one series."""
    width = WIDTH + 200 * (len(panels) - 1)
    longest = max([_width(str(c), FONT - 2) for cats, _, _, _ in panels for c in cats] or [0])
    keyed = any(len(series) > 1 for _, series, _, _ in panels)
    top, plot_h = 12 + (LEGEND if keyed else 0), 260  # (a legend row above the bars)
    height = top + plot_h + longest * 0.87 + 50  # (labels turned 60 degrees)
    doc = _Doc(width, height, title)
    each = width / max(1, len(panels))
    for p, (cats, series, xlabel, ylabel) in enumerate(panels):
        axis = ticks(0, _top(series))
        left = p * each + 30 + max(_width(number(t), FONT - 1) for t in axis)
        plot_w = each - (left - p * each) - 16
        bottom = top + plot_h
        scale = plot_h / axis[-1] if axis[-1] else 0
        doc.grid(axis, lambda t: bottom - t * scale, left, left + plot_w, vertical=False)
        k = max(1, len(series))
        slot = plot_w / max(1, len(cats))
        bar = slot * 0.8 / k
        for i, cat in enumerate(cats):
            x0 = left + i * slot + slot * 0.1
            for j, (name, values) in enumerate(series):
                v = values[i]
                doc.rect(x0 + j * bar, bottom - _num(v) * scale, bar, _num(v) * scale, COLORS[j % len(COLORS)],
                         f"{cat}: {name}: {_exact(v)}")
            cx = left + (i + 0.5) * slot
            doc.text(cx, bottom + 12, str(cat), "end", FONT - 2, rotate=-60)
        doc.axes(left, top, bottom, left + plot_w)
        doc.text(left + plot_w / 2, height - 8, xlabel, "middle")
        doc.text(p * each + 14, top + plot_h / 2, ylabel, "middle", rotate=-90)
        if len(series) > 1:
            doc.legend([name for name, _ in series], left, 6, across=True)
    return doc.done()


def lines(xs: Sequence[float], series: Sequence[Series], xlabel: str, ylabel: str, title: str) -> str:
    """A line per series over ``xs`` (a dot at each point when they are few), a legend on the right."""
    legend = _legend_width(series) + 10 if series else 0
    yaxis = ticks(0, _top(series))
    xaxis = ticks(min(xs, default=0), max(xs, default=1))
    top, plot_h = 12, 330
    left = 34 + max(_width(number(t), FONT - 1) for t in yaxis)
    plot_w = WIDTH - left - 20 - legend
    height = max(top + plot_h + 50, top + LEGEND * len(series) + 10)
    bottom = top + plot_h
    doc = _Doc(WIDTH, height, title)
    span = (xaxis[-1] - xaxis[0]) or 1
    sx, sy = plot_w / span, plot_h / (yaxis[-1] or 1)
    doc.grid(xaxis, lambda t: left + (t - xaxis[0]) * sx, top, bottom, vertical=True)
    doc.grid(yaxis, lambda t: bottom - t * sy, left, left + plot_w, vertical=False)
    dots = len(xs) <= 200
    for j, (name, values) in enumerate(series):
        color = COLORS[j % len(COLORS)]
        points = [(left + (x - xaxis[0]) * sx, bottom - _num(v) * sy) for x, v in zip(xs, values)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        doc.parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{path}">'
                         f"<title>{escape(name)}</title></polyline>")
        if dots:
            for (x, y), xv, v in zip(points, xs, values):
                doc.parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{color}"><title>'
                                 f"{escape(name)} at {xv:g}: {_exact(v)}</title></circle>")
    doc.axes(left, top, bottom, left + plot_w)
    doc.text(left + plot_w / 2, bottom + 38, xlabel, "middle")
    doc.text(14, top + plot_h / 2, ylabel, "middle", rotate=-90)
    if series:
        doc.legend([name for name, _ in series], WIDTH - legend, top)
    return doc.done()


def message(text: str, title: str) -> str:
    """A figure that only says ``text`` (e.g. that there is nothing to show)."""
    doc = _Doc(WIDTH, 120, title)
    doc.text(WIDTH / 2, 64, text, "middle")
    return doc.done()
