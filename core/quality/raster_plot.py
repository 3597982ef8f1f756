"""Line plots drawn with numpy alone and written as PNG: the quality report's plot wherever the report is made (Blender
ships no matplotlib).

Stacked panels share the time axis; each has its label, y ticks and grid; series are drawn as one-pixel polylines
(NaN breaks a line). Text is a 5 x 7 bitmap font (the classic column-coded LCD font: five bytes per glyph, bit 0
the top row) drawn at twice its size; upper-case letters without a glyph of their own are drawn in lower case.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

_GLYPHS = {
    "0": "3e5149453e", "1": "00427f4000", "2": "4261514946", "3": "2141454b31", "4": "1814127f10",
    "5": "2745454539", "6": "3c4a494930", "7": "0171090503", "8": "3649494936", "9": "064949291e",
    "a": "2054545478", "b": "7f48444438", "c": "3844444420", "d": "384444487f", "e": "3854545418",
    "f": "087e090102", "g": "0c5252523e", "h": "7f08040478", "i": "00447d4000", "j": "2040443d00",
    "k": "7f10284400", "l": "00417f4000", "m": "7c04180478", "n": "7c08040478", "o": "3844444438",
    "p": "7c14141408", "q": "081414187c", "r": "7c08040408", "s": "4854545420", "t": "043f444020",
    "u": "3c4040207c", "v": "1c2040201c", "w": "3c4030403c", "x": "4428102844", "y": "0c5050503c",
    "z": "4464544c44", "A": "7e1111117e", "B": "7f49494936", "C": "3e41414122", "D": "7f4141221c",
    "H": "7f0808087f", "R": "7f09192946", "S": "4649494931", "T": "01017f0101", "V": "1f2040201f",
    " ": "0000000000", "(": "001c224100", ")": "0041221c00", ".": "0060600000", ",": "0050300000",
    ":": "0036360000", "/": "2010080402", "-": "0808080808", "'": "0005030000", "%": "2313086462",
    "_": "4040404040", "+": "08083e0808", "=": "1414141414",
}
GLYPH_SCALE = 2
CHAR_W, CHAR_H = 6 * GLYPH_SCALE, 8 * GLYPH_SCALE
INK, GRID, FRAME = (30, 30, 30), (225, 225, 225), (120, 120, 120)
COLOURS = ((31, 119, 180), (255, 127, 14), (44, 160, 44))
MIN_TOP = 1.0
"""A panel's axis reaches at least this high: a series of hundredths reads as near zero, not as noise."""


def _glyph(char: str) -> np.ndarray:
    """(7, 5) bool pixels of a character (an unknown one is a box)."""
    code = _GLYPHS.get(char) or _GLYPHS.get(char.lower()) or "7f4141417f"
    columns = np.frombuffer(bytes.fromhex(code), dtype=np.uint8)
    return ((columns[None, :] >> np.arange(7)[:, None]) & 1).astype(bool)


class Canvas:
    """An RGB image to draw on; x to the right, y down, in pixels."""

    def __init__(self, width: int, height: int):
        self.pixels = np.full((height, width, 3), 255, dtype=np.uint8)

    def text(self, x: int, y: int, text: str, colour=INK, anchor: str = "left") -> None:
        """Text whose top edge is at y, starting at x ("left"), ending at x ("right") or centred on it."""
        width = CHAR_W * len(text)
        x = x - width if anchor == "right" else x - width // 2 if anchor == "centre" else x
        for k, char in enumerate(text):
            pixels = np.kron(_glyph(char), np.ones((GLYPH_SCALE, GLYPH_SCALE), dtype=bool))
            self._blit(x + k * CHAR_W, y, pixels, colour)

    def _blit(self, x: int, y: int, mask: np.ndarray, colour) -> None:
        h, w = mask.shape
        top, left = max(y, 0), max(x, 0)
        bottom, right = min(y + h, self.pixels.shape[0]), min(x + w, self.pixels.shape[1])
        if bottom > top and right > left:
            region = self.pixels[top:bottom, left:right]
            region[mask[top - y:bottom - y, left - x:right - x]] = colour

    def line(self, x0: float, y0: float, x1: float, y1: float, colour) -> None:
        self.polyline(np.array([x0, x1]), np.array([y0, y1]), colour)

    def polyline(self, xs: np.ndarray, ys: np.ndarray, colour) -> None:
        """A line through the points; a non-finite point breaks it."""
        xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        ok = np.isfinite(xs[:-1]) & np.isfinite(ys[:-1]) & np.isfinite(xs[1:]) & np.isfinite(ys[1:])
        x0, y0, x1, y1 = xs[:-1][ok], ys[:-1][ok], xs[1:][ok], ys[1:][ok]
        if not len(x0):
            return
        with np.errstate(over="ignore", invalid="ignore"):  # a segment beyond any canvas is clipped below
            counts = np.minimum(np.maximum(np.abs(x1 - x0), np.abs(y1 - y0)), 2.0 * sum(self.pixels.shape))
        counts = counts.astype(int) + 1  # each segment's steps: one a pixel along its longer axis
        segment = np.repeat(np.arange(len(x0)), counts + 1)
        step = np.arange(len(segment)) - np.repeat(np.cumsum(counts + 1) - (counts + 1), counts + 1)
        last = step == counts[segment]
        px = np.rint(np.where(last, x1[segment], x0[segment] + step * ((x1 - x0) / counts)[segment]))
        py = np.rint(np.where(last, y1[segment], y0[segment] + step * ((y1 - y0) / counts)[segment]))
        inside = (px >= 0) & (px < self.pixels.shape[1]) & (py >= 0) & (py < self.pixels.shape[0])
        self.pixels[py[inside].astype(int), px[inside].astype(int)] = colour


def nice_ticks(low: float, high: float, count: int = 5) -> np.ndarray:
    """Round tick values covering [low, high], about `count` of them (steps of 1, 2 or 5 times a power of ten)."""
    span = max(high - low, 1e-9)
    raw = span / count
    step = min((m * 10.0 ** np.floor(np.log10(raw)) for m in (1.0, 2.0, 5.0, 10.0)),
               key=lambda s: abs(span / s - count))
    first, last = np.floor(low / step + 1e-9), np.ceil(high / step - 1e-9)
    return np.arange(first, last + 0.5) * step


def _label(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 1e-9 else f"{value:g}"


def _scale(low: float, high: float, at_low: float, at_high: float):
    """The map from values in [low, high] to pixel rows from at_low to at_high."""
    def rows(values):
        return at_low + (np.asarray(values, float) - low) / (high - low) * (at_high - at_low)
    return rows


def plot_panels(times: np.ndarray, panels, title: str = "", width: int = 900, height: int = 700) -> np.ndarray:
    """RGB pixels (H, W, 3) of stacked panels over a shared time axis: `panels` is a list of (label, [(name,
    values (T,))]), each panel's series in COLOURS and named in a legend when there are several."""
    canvas = Canvas(width, height)
    left, right, top, bottom = 80, width - 20, 20 + (CHAR_H + 10 if title else 0), height - 50
    if title:
        canvas.text(width // 2, 12, title, anchor="centre")
    gap = 30
    panel_h = (bottom - top - gap * (len(panels) - 1)) / len(panels)
    t0, t1 = (float(times[0]), float(times[-1])) if len(times) > 1 else (0.0, 1.0)
    t1 = t1 if t1 > t0 else t0 + 1.0

    def x_of(t):
        return left + (np.asarray(t, float) - t0) / (t1 - t0) * (right - left)

    x_ticks = nice_ticks(t0, t1, 8)
    x_ticks = x_ticks[(x_ticks >= t0) & (x_ticks <= t1)]
    for k, (label, series) in enumerate(panels):
        y0 = top + k * (panel_h + gap)
        y1 = y0 + panel_h
        finite = np.concatenate([np.asarray(v, float)[np.isfinite(v)] for _, v in series] + [np.zeros(1)])
        low, high = min(0.0, float(finite.min())), max(float(finite.max()), MIN_TOP)
        ticks = nice_ticks(low, high * 1.05, 4)
        low, high = float(ticks[0]), float(ticks[-1])
        y_of = _scale(low, high, y1, y0)
        for tick in ticks:
            canvas.line(left, y_of(tick), right, y_of(tick), GRID)
            canvas.text(left - 6, int(y_of(tick)) - CHAR_H // 2, _label(tick), anchor="right")
        for tick in x_ticks:
            canvas.line(x_of(tick), y0, x_of(tick), y1, GRID)
        for (name, values), colour in zip(series, COLOURS):
            canvas.polyline(x_of(times), y_of(np.clip(values, low, high)), colour)
        for x0, y_a, x1, y_b in ((left, y0, right, y0), (left, y1, right, y1), (left, y0, left, y1),
                                 (right, y0, right, y1)):
            canvas.line(x0, y_a, x1, y_b, FRAME)
        canvas.text(left + 8, int(y0) + 6, label)
        if len(series) > 1:
            for j, ((name, _), colour) in enumerate(zip(series, COLOURS)):
                canvas.text(right - 8, int(y0) + 6 + j * (CHAR_H + 2), name, colour, anchor="right")
    for tick in x_ticks:
        canvas.text(int(x_of(tick)), bottom + 8, _label(tick), anchor="centre")
    canvas.text((left + right) // 2, bottom + 8 + CHAR_H + 4, "time (s)", anchor="centre")
    return canvas.pixels


def png_bytes(pixels: np.ndarray) -> bytes:
    """An 8-bit RGB image (H, W, 3) as a PNG file's bytes."""
    height, width, _ = pixels.shape
    rows = np.concatenate([np.zeros((height, 1), dtype=np.uint8), pixels.reshape(height, -1)], axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + chunk(b"IEND", b""))
