"""The add-on's sidebar panels drawn headless: Blender as a module has no window, so each panel's `draw` runs
against a layout that writes down what it would show (labels, properties with their values, operator buttons,
list rows as the lists draw them), and the listing is rendered as text objects into an image.

    python -m addon_tools.panel_listing --blend out/demo.blend --png docs/panels.png --md docs/panels.md

The .blend is the demo's (`python build.py demo`); its stream is listed as a take. Left out of the extension zip.
"""
import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

import bpy

from core.files.atomic import check_outputs, write_text, written_path

LIST_ROWS = 4
"""A list shows this many rows, then how many more it holds."""


def shown(data, name: str) -> str:
    """A property's value as the panel shows it: an enum item's name, an object's name, on/off, numbers."""
    prop = data.bl_rna.properties[name]
    value = getattr(data, name)
    if prop.type == 'ENUM':
        return {item.identifier: item.name for item in prop.enum_items}.get(value, str(value))
    if prop.type == 'POINTER':
        return value.name if value is not None else "—"
    if prop.type == 'BOOLEAN':
        return "on" if value else "off"
    if prop.type == 'FLOAT':
        return ", ".join(f"{v:.3g}" for v in value) if getattr(prop, "is_array", False) else f"{value:.3g}"
    return str(value) if value not in ("", None) else "—"


class ListedLayout:
    """What a panel draws, written down as lines (a row's items on one line, a box's indented)."""

    def __init__(self, lines: list, depth: int = 0, row: list | None = None):
        self.lines, self.depth, self.row_items = lines, depth, row

    def _add(self, text: str) -> None:
        if self.row_items is not None:
            self.row_items.append(text)
        else:
            self.lines.append("  " * self.depth + text)

    def row(self, **_options):
        if self.row_items is not None:  # a row in a row: the same line
            return self
        items = []
        self.lines.append(items)
        return ListedLayout(self.lines, self.depth, items)

    def column(self, **_options):
        return ListedLayout(self.lines, self.depth)

    def box(self):
        return ListedLayout(self.lines, self.depth + 1)

    def separator(self, **_options):
        self.lines.append("")

    def label(self, text: str = "", **_options):
        self._add(text)

    def prop(self, data, name: str, text: str | None = None, **_options):
        label = data.bl_rna.properties[name].name if text is None else text
        self._add(f"{label}: {shown(data, name)}" if label else shown(data, name))

    def prop_search(self, data, name: str, *_search, text: str = "", **_options):
        self.prop(data, name, text)

    def operator(self, idname: str, text: str | None = None, **_options):
        group, name = idname.split(".")
        self._add(f"[{text or getattr(getattr(bpy.ops, group), name).get_rna_type().name}]")
        return SimpleNamespace()

    def operator_menu_enum(self, _idname: str, _prop: str, text: str = "", **_options):
        self._add(f"[{text} ▾]")

    def template_list(self, list_type: str, _list_id, data, name: str, active_data, active_name: str, rows: int = 5,
                      **_options):
        ui_list, items = getattr(bpy.types, list_type), getattr(data, name)
        for index, item in enumerate(items[:LIST_ROWS]):
            marker = "▸ " if index == getattr(active_data, active_name) else "  "
            parts = []
            ui_list.draw_item(None, bpy.context, ListedLayout([], 0, parts), data, item, 0, active_data, active_name,
                              index)
            self._add(marker + "  ".join(p for p in parts if p))
        if len(items) > LIST_ROWS:
            self._add(f"  … {len(items) - LIST_ROWS} more")
        if not len(items):
            self._add("  (empty)")


def panel_listing(context, panels=None) -> dict[str, list[str]]:
    """Each VR Avatar sidebar panel's label and the lines it draws in the current scene (`panels`: the add-on's
    panels module, the checkout's by default)."""
    if panels is None:
        from vr_avatar_addon import panels
    listing = {}
    for panel in (c for c in panels.classes if issubclass(c, bpy.types.Panel)):
        lines = []
        layout = ListedLayout(lines)
        panel.draw(SimpleNamespace(layout=layout, draw_section=lambda lay, ctx, p=panel: p.draw_section(None, lay, ctx)),
                   context)
        listing[panel.bl_label] = [" | ".join(filter(None, line)) if isinstance(line, list) else line for line in lines]
    return listing


def as_markdown(listing: dict[str, list[str]]) -> str:
    return "\n".join(f"### {label}\n\n```\n" + "\n".join(lines) + "\n```\n" for label, lines in listing.items())


COLUMNS = 2
"""Panels side by side in the image."""


def render_listing(listing: dict[str, list[str]], path: Path) -> None:
    """The listing as text objects, the panels in a grid of COLUMNS, rendered with Workbench into `path`."""
    scene = bpy.data.scenes.new("VR Avatar panels")
    world = scene.world = bpy.data.worlds.new("Panels")
    world.color = (0.05, 0.05, 0.055)
    size, column_width, line = 0.3, 13.0, 0.3 * 1.35
    panels = list(listing.items())
    heights = [max(len(lines) for _, lines in panels[i:i + COLUMNS]) + 3 for i in range(0, len(panels), COLUMNS)]
    for index, (label, lines) in enumerate(panels):
        top = -sum(heights[:index // COLUMNS]) * line
        for row, text in enumerate([label.upper(), ""] + lines):
            if not text:
                continue
            curve = bpy.data.curves.new(f"{label} {row}", 'FONT')
            curve.body, curve.size = text[:60], size
            obj = bpy.data.objects.new(curve.name, curve)
            obj.location = ((index % COLUMNS) * column_width, top - row * line, 0.0)
            obj.color = (1.0, 0.7, 0.3, 1.0) if row == 0 else (0.92, 0.92, 0.92, 1.0)
            scene.collection.objects.link(obj)
    height, width = sum(heights) * line + 0.6, COLUMNS * column_width
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    camera.data.type, camera.data.ortho_scale = 'ORTHO', max(width, height)
    camera.location = (width / 2.0 - 0.4, -height / 2.0 + 0.6, 10.0)
    scene.collection.objects.link(camera)
    scene.camera = camera
    scene.render.engine = 'BLENDER_WORKBENCH'
    scene.display.shading.light, scene.display.shading.color_type = 'FLAT', 'OBJECT'
    scene.view_settings.view_transform = 'Standard'
    scene.render.resolution_x = 1200
    scene.render.resolution_y = int(1200 * height / width)
    scene.render.image_settings.color_mode, scene.render.image_settings.compression = 'RGB', 100
    scene.render.dither_intensity = 0.0
    scene.render.use_file_extension = False
    with written_path(path) as temporary:
        scene.render.filepath = str(temporary)
        bpy.ops.render.render(write_still=True, scene=scene.name)


def run(blend: Path, png: Path, md: Path) -> dict[str, list[str]]:
    import vr_avatar_addon

    check_outputs([png, md], [blend])
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    vr_avatar_addon.register()
    settings = bpy.context.scene.vr_avatar
    stream = Path(bpy.path.abspath(settings.stream.stream_path))
    if not settings.stream.takes and stream.is_file():
        from core.files.stream import read_stream
        vr_avatar_addon.recording.listed_take(settings.stream.takes, stream, read_stream(stream))
    listing = panel_listing(bpy.context)
    write_text(md, "# The VR Avatar panels, as drawn on the demo scene\n\n" + as_markdown(listing))
    render_listing(listing, png.resolve())
    return listing


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blend", default="out/demo.blend")
    parser.add_argument("--png", default="docs/panels.png")
    parser.add_argument("--md", default="docs/panels.md")
    args = parser.parse_args(argv)
    run(Path(args.blend), Path(args.png), Path(args.md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
