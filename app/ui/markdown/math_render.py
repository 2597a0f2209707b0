"""Formulas drawn for the answer view: LaTeX → SVG (ziamath) → an image (QtSvg), cached.

Guarantees: `render` draws a formula in the given colour with its x-height matched to the
text's, on a transparent image at the screen's pixel ratio; an inline formula's image is
padded so that, laid out with the alignment it names (`Formula.middle`: Qt's AlignMiddle, else
AlignBaseline) in a line of that font, its own baseline sits on the text's baseline (display
math stands alone on its line and is not padded); it returns None, never raises,
for a formula ziamath cannot read (or one longer than `MAX_LATEX`), so the caller can show
the source instead; results are kept in a module-wide LRU cache keyed by formula, display
style, colour, x-height, descent and pixel ratio, so a formula streamed again (the unfinished
tail is laid out on every append) or shown in many answers is drawn once. ziamath is imported
on first use only (and told to write SVG 1.1, which QtSvg draws: its SVG 2 symbols it cannot).
"""

from __future__ import annotations

import atexit
import hashlib
import math
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType

from PySide6.QtCore import QByteArray, QRectF, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

MAX_LATEX = 4000  # characters; longer "formulas" are shown as their source
DISPLAY_SCALE = 1.1  # display math a little larger than the text around it
STIX_X_HEIGHT = 0.48  # ziamath's font (STIX Two Math): x-height per em, matched to the text's
_VIEWBOX = re.compile(r'viewBox="([-\d.e]+) ([-\d.e]+) ([-\d.e]+) ([-\d.e]+)"')


@dataclass(frozen=True)
class Formula:
    image: QImage  # device pixels; its devicePixelRatio is set
    width: float  # logical pixels: the size to lay it out at
    height: float
    middle: bool  # to be aligned AlignMiddle (else AlignBaseline)


@lru_cache(maxsize=1)
def _ziamath() -> ModuleType:
    with warnings.catch_warnings():  # ziamath 0.13 reads its font with a deprecated call
        warnings.simplefilter("ignore", DeprecationWarning)
        import ziafont
        import ziamath
    # plain paths, no <symbol>/<use>: QtSvg draws SVG Tiny, which has no symbols
    ziafont.config.svg2 = False  # type: ignore[attr-defined]
    return ziamath


def warm_up() -> None:
    """Load ziamath and its fonts now (about 0.15 s), not at an answer's first formula; pure
    Python (the SVG text only), so it may run on any thread."""
    _svg("x^2", False, "#000000", 14.0)


def _svg(latex: str, display: bool, colour: str, px: float) -> str | None:
    zm = _ziamath()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return str(zm.Latex(latex, size=px, color=colour, inline=not display).svg())
    except Exception:  # a parser of untrusted text: any failure means "show the source"
        return None


def _placement(
    height: float, ascent: float, x_height: float, descent: float
) -> tuple[float, float, bool]:
    """(image height, formula top, middle-aligned?) that put the formula's baseline on the
    text's. Qt sets a baseline-aligned image's bottom the font's descent below the baseline
    (enough for most formulas: no line grows downwards), and a middle-aligned one's top
    (H + x_height / 2) / 2 above it (for formulas that reach deeper)."""
    depth = height - ascent
    if depth <= descent:
        return height + descent - depth, 0.0, False
    half_x = x_height / 2
    padded = math.ceil(max(height, 2 * ascent - half_x, 2 * depth + half_x))
    return float(padded), (padded + half_x) / 2 - ascent, True


@lru_cache(maxsize=512)
def render(
    latex: str, display: bool, colour: str, x_height: float, descent: float, dpr: float
) -> Formula | None:
    """`latex` drawn in `colour` for a text line whose font has the given x-height and
    descent, at pixel ratio `dpr` (None: it cannot be drawn)."""
    if len(latex) > MAX_LATEX or not latex.strip():
        return None
    px = x_height / STIX_X_HEIGHT * (DISPLAY_SCALE if display else 1.0)
    svg = _svg(latex, display, colour, px)
    box = _VIEWBOX.search(svg or "")
    if svg is None or box is None:
        return None
    renderer = QSvgRenderer(QByteArray(svg.encode()))
    width, height = float(box[3]), float(box[4])
    if not renderer.isValid() or width <= 0 or height <= 0:
        return None
    ascent = -float(box[2])  # the baseline is y = 0 in ziamath's SVG
    if display:  # alone on its line: nothing to align with, so no padding
        total, top, middle = height, 0.0, False
    else:
        total, top, middle = _placement(height, ascent, x_height, descent)
    image = QImage(
        math.ceil(width * dpr), math.ceil(total * dpr), QImage.Format.Format_ARGB32_Premultiplied
    )
    image.setDevicePixelRatio(dpr)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, top, width, height))
    painter.end()
    return Formula(image, image.width() / dpr, total, middle)


atexit.register(render.cache_clear)  # its images go before Qt does, not after (a crash)


def resource_name(
    latex: str, display: bool, colour: str, x_height: float, descent: float, dpr: float
) -> str:
    """The document resource name for one drawing of a formula (a `math:` URL)."""
    key = repr((latex, display, colour, x_height, descent, dpr)).encode()
    return "math:" + hashlib.sha1(key, usedforsecurity=False).hexdigest()[:20]


__all__ = ["DISPLAY_SCALE", "MAX_LATEX", "STIX_X_HEIGHT", "Formula", "render", "resource_name"]
