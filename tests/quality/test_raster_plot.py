"""The quality report's plot drawn with numpy alone (core/quality/raster_plot.py): a valid PNG, lines where the data
is, and no matplotlib needed."""
from __future__ import annotations

import struct
import subprocess
import sys
import zlib

import numpy as np
from hypothesis import given, settings, strategies as st

from core.quality.raster_plot import COLOURS, Canvas, nice_ticks, plot_panels, png_bytes
from conftest import ROOT


def decode_png(data: bytes) -> np.ndarray:
    """The pixels of an 8-bit RGB PNG whose rows use filter 0 (what png_bytes writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length:at + 12 + length])[0] == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks[kind] = chunks.get(kind, b"") + body
        at += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour) == (8, 2)
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), dtype=np.uint8).reshape(height, 1 + 3 * width)
    assert not rows[:, 0].any()
    return rows[:, 1:].reshape(height, width, 3)


@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 2 ** 32 - 1))
@settings(max_examples=30, deadline=None)
def test_png_bytes_round_trip(width, height, seed):
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    np.testing.assert_array_equal(decode_png(png_bytes(pixels)), pixels)


@given(st.floats(-1e4, 1e4), st.floats(1e-3, 1e4))
@settings(max_examples=100, deadline=None)
def test_ticks_are_round_and_cover_the_range(low, span):
    ticks = nice_ticks(low, low + span, 5)
    step = ticks[1] - ticks[0]
    mantissa = step / 10.0 ** np.floor(np.log10(step))
    assert ticks[0] <= low + 1e-9 * span and ticks[-1] >= low + span - 1e-9 * span
    assert min(abs(mantissa - m) for m in (1.0, 2.0, 5.0, 10.0)) < 1e-6
    assert 2 <= len(ticks) <= 13


def test_a_series_is_drawn_where_its_values_are_and_a_gap_breaks_it():
    times = np.linspace(0.0, 10.0, 101)
    flat = np.full(101, 5.0)
    flat[40:60] = np.nan
    pixels = plot_panels(times, [("level (cm)", [("level", flat)])], "a title")
    drawn = np.all(pixels == COLOURS[0], axis=-1)
    rows, columns = np.nonzero(drawn)
    assert len(set(rows)) == 1  # one horizontal line
    left, right = columns.min(), columns.max()
    gap = sorted(set(range(left, right + 1)) - set(columns))
    assert 0.15 < len(gap) / (right - left) < 0.25  # the fifth with NaN is not drawn
    assert (pixels < 100).all(axis=-1).sum() > 500  # text and frames in ink


@given(st.lists(st.tuples(st.floats(-30, 90), st.floats(-30, 70)), min_size=2, max_size=12))
@settings(max_examples=60, deadline=None)
def test_a_polyline_is_every_pixel_along_its_segments_and_only_those(points):
    """Each segment, drawn alone: its ends' pixels (where on the canvas), a path of touching pixels between them, and
    nothing farther than a pixel from it; all segments together draw the union."""
    xs, ys = np.array(points).T
    together = Canvas(60, 40)
    together.polyline(xs, ys, (0, 0, 0))
    union = np.zeros((40, 60), bool)
    for (x0, y0), (x1, y1) in zip(points[:-1], points[1:]):
        alone = Canvas(60, 40)
        alone.polyline(np.array([x0, x1]), np.array([y0, y1]), (0, 0, 0))
        drawn = np.all(alone.pixels == 0, axis=-1)
        union |= drawn
        rows, columns = np.nonzero(drawn)
        for x, y in ((x0, y0), (x1, y1)):
            if 0 <= round(x) < 60 and 0 <= round(y) < 40:
                assert drawn[int(np.rint(y)), int(np.rint(x))]
        along = np.array([x1 - x0, y1 - y0])
        length = max(float(np.linalg.norm(along)), 1e-12)
        offsets = np.stack([columns - x0, rows - y0], axis=-1)
        across = np.abs(offsets[:, 0] * along[1] - offsets[:, 1] * along[0]) / length
        assert np.all(across <= 1.0)
        if 0 <= x0 < 59.5 and 0 <= y0 < 39.5 and 0 <= x1 < 59.5 and 0 <= y1 < 39.5:  # inside: one touching path
            order = np.argsort(offsets @ along)
            steps = np.abs(np.diff(np.stack([columns, rows], axis=-1)[order], axis=0))
            assert np.all(steps.max(axis=-1) <= 1) if len(steps) else True
    np.testing.assert_array_equal(np.all(together.pixels == 0, axis=-1), union)


def test_text_draws_each_glyph_and_an_unknown_one_as_a_box():
    canvas = Canvas(60, 20)
    canvas.text(0, 0, "a~")
    ink = (canvas.pixels < 128).all(axis=-1)
    assert ink[:, :12].sum() > 20 and ink[:, 12:24].sum() == 4 * (7 + 2 + 2 + 2 + 7)  # a 5 x 7 frame, doubled


def test_the_report_writes_its_png_without_matplotlib(tmp_path):
    script = ("import sys; sys.modules['matplotlib'] = None\n"
              "import numpy as np\n"
              "from core.quality.report import write_report\n"
              "t = np.arange(50) / 30\n"
              "series = {'time_s': t, 'root_cm': np.sin(t), 'hand_cm': np.zeros((50, 2)), 'foot_skate_cm_s': t}\n"
              f"print(write_report({str(tmp_path / 'take')!r}, series, {{}}, 'take')['plot'])\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert decode_png((tmp_path / "take.report.png").read_bytes()).shape == (700, 900, 3)
