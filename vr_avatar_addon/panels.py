"""Panels: the VR Avatar tab in the 3D view's sidebar, one panel per stage of the work."""
import math

import bpy

from . import solve_cache
from .avatar import REQUIRED_JOINTS
from .operators.stream import VR_AVATAR_OT_record_stream
from .scene_timing import scene_fps

AVATAR_FIGURES = (("mesh_below_floor_frames", "Mesh under the floor", "% of frames"),
                  ("toe_below_rest_cm", "Planted toes under rest", " cm"), ("foot_slide_cm_s", "Foot sliding", " cm/s"),
                  ("hand_cm", "Hands to controllers", " cm"), ("head_cm", "Head to headset", " cm"))
"""The avatar quality figures the Solve and Bake panel lists: key, label, unit."""


class VRAvatarPanel:
    """What the add-on's panels share: the sidebar tab and property layout; each draws its section."""
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "VR Avatar"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        self.draw_section(layout, context)


class VIEW3D_PT_vr_avatar(VRAvatarPanel, bpy.types.Panel):
    """Avatar: the target armature and its humanoid bone mapping."""
    bl_label = "Avatar"

    def draw_section(self, layout, context):
        settings = context.scene.vr_avatar
        layout.prop(settings, "target_armature")
        layout.operator("vr_avatar.map_bones", icon='BONE_DATA')
        row = layout.row(align=True)
        row.operator_menu_enum("vr_avatar.apply_mapping_preset", "preset", text="Preset", icon='PRESET')
        row.operator("vr_avatar.load_mapping_preset", text="Load", icon='IMPORT')
        row.operator("vr_avatar.save_mapping_preset", text="Save", icon='EXPORT')
        missing = sum(1 for item in settings.bone_map if not item.bone and item.joint in REQUIRED_JOINTS)
        if missing:
            layout.label(text=f"{missing} required joint(s) not mapped", icon='ERROR')
        guessed = sum(1 for item in settings.bone_map if item.guessed)
        if guessed:
            layout.label(text=f"{guessed} joint(s) guessed from the hierarchy: check them", icon='QUESTION')
        for note in filter(None, settings.bone_map_notes.split("; ")):
            layout.label(text=note, icon='INFO')
        layout.template_list("VRAVATAR_UL_bone_map", "", settings, "bone_map", settings, "bone_map_index", rows=6)
        solve = settings.solve
        layout.prop(solve, "calibration")
        if solve.calibration == 'EXPLICIT':
            layout.prop(solve, "user_height")
            layout.prop(solve, "arm_span")


class VRAVATAR_UL_bone_map(bpy.types.UIList):
    """Humanoid joint -> bone of the target armature; unmapped required joints and guessed ones are flagged."""

    def draw_item(self, context, layout, _data, item, _icon, _active_data, _active_property, _index=0):
        armature = context.scene.vr_avatar.target_armature
        row = layout.row(align=True)
        if item.bone:
            icon, text = ('QUESTION', f"{item.joint} (guessed)") if item.guessed else ('CHECKMARK', item.joint)
        else:
            icon, text = ('ERROR', item.joint) if item.joint in REQUIRED_JOINTS else ('BLANK1', f"{item.joint} (none)")
        row.label(text=text, icon=icon)
        if armature is not None and armature.type == 'ARMATURE':
            row.prop_search(item, "bone", armature.data, "bones", text="")
        else:
            row.prop(item, "bone", text="")


class VRAVATAR_UL_databases(bpy.types.UIList):
    """Motion databases of the scene: file, poses and the HMD-height ratios each serves."""

    def draw_item(self, _context, layout, _data, item, _icon, _active_data, _active_propname, _index):
        row = layout.row(align=True)
        row.label(text=bpy.path.basename(item.path) or "(no file)", icon='FILE')
        row.label(text=f"{item.poses} poses")
        high = "no limit" if item.height_max >= 2.0 else f"{item.height_max:.2f}"
        row.label(text=f"height {item.height_min:.2f} to {high}")


class VRAVATAR_UL_takes(bpy.types.UIList):
    """Recorded takes: name, length, and whether the calibration gesture starts them."""

    def draw_item(self, _context, layout, _data, item, _icon, _active_data, _active_propname, _index):
        row = layout.row(align=True)
        row.label(text=item.name, icon='REC')
        row.label(text=f"{item.duration_s:.1f} s")
        row.label(text=f"{item.height_m:.2f} m" if item.height_m else "", icon='CHECKMARK' if item.calibrated else 'BLANK1')


class VIEW3D_PT_vr_avatar_library(VRAvatarPanel, bpy.types.Panel):
    """Motion library: import motion capture and build the motion databases."""
    bl_label = "Motion Library"

    def draw_section(self, layout, context):
        library = context.scene.vr_avatar.library
        layout.operator("vr_avatar.import_mocap", icon='IMPORT')
        layout.prop(library, "mocap_path")
        layout.prop(library, "locomotion_only")
        layout.prop(library, "mirror")
        column = layout.column(align=True)
        column.prop(library, "height_min", text="HMD Height Ratio Min")
        column.prop(library, "height_max", text="Max")
        row = layout.row(align=True)
        row.operator("vr_avatar.build_database", text="Build from Files", icon='FILE_FOLDER').source = 'FILES'
        row.operator("vr_avatar.build_database", text="Build from Actions", icon='ACTION').source = 'ACTIONS'
        row = layout.row()
        row.template_list("VRAVATAR_UL_databases", "", library, "databases", library, "databases_index", rows=3)
        row.operator("vr_avatar.remove_database", icon='REMOVE', text="")
        layout.operator("vr_avatar.stitch_actions", icon='NLA')


class VIEW3D_PT_vr_avatar_stream(VRAvatarPanel, bpy.types.Panel):
    """Stream: the three-point stream as empties, and recording from a VR session."""
    bl_label = "Stream"

    def draw_section(self, layout, context):
        stream = context.scene.vr_avatar.stream
        row = layout.row(align=True)
        row.operator("vr_avatar.load_stream", icon='IMPORT')
        row.operator("vr_avatar.export_stream", icon='EXPORT')
        layout.prop(stream, "stream_path")
        layout.prop(stream, "grip")
        column = layout.column(align=True)
        for name in ("head", "left", "right"):
            column.prop(stream, name)
        layout.separator()
        layout.prop(stream, "record_path")
        row = layout.row(align=True)
        row.prop(stream, "countdown_s")
        row.prop(stream, "record_rate", text="")
        row.prop(stream, "record_by_button", toggle=True, icon='EVENT_A')
        recording = VR_AVATAR_OT_record_stream.is_recording()
        row = layout.row(align=True)
        for source, text in (('BLENDER_VR', "Record VR Session"), ('OPENXR', "Record OpenXR")):
            row.operator("vr_avatar.record_stream", text="Stop Recording" if recording else text,
                         icon='PAUSE' if recording else 'REC', depress=recording).source = source
        layout.template_list("VRAVATAR_UL_takes", "", stream, "takes", stream, "takes_index", rows=3)
        row = layout.row(align=True)
        row.operator("vr_avatar.load_take", icon='IMPORT')
        row.operator("vr_avatar.remove_take", icon='REMOVE')
        row.operator("vr_avatar.bake_takes", icon='NLA')


class VIEW3D_PT_vr_avatar_solve(VRAvatarPanel, bpy.types.Panel):
    """Solve, scrub and bake: the solver's settings, the cached solve and its quality report."""
    bl_label = "Solve and Bake"

    def draw_section(self, layout, context):
        solve = context.scene.vr_avatar.solve
        layout.prop(solve, "method")
        if solve.method == 'N3P':
            settings = ("hmd_only", "foot_lock", "arm_ik", "avatar_size", "stride_scaled")
        elif solve.method == 'HYBRID':
            settings = ("matched_legs", *(("alpha_m", "search_interval", "responsiveness_s") if solve.matched_legs
                                          else ()), "foot_lock", "orientation", "avatar_size", "stride_scaled")
        else:
            settings = ("alpha_m", "search_interval", "responsiveness_s", "foot_lock", "arm_ik", "elbow_constants",
                        "orientation", "avatar_size", "stride_scaled")
        settings += ("calibrate_devices", "physics")
        for name in settings:
            if name == "elbow_constants" and not solve.arm_ik:
                continue
            if name == "arm_ik" and solve.method == 'N3P':
                layout.prop(solve, name, text="Hand IK")
            else:
                layout.prop(solve, name)
        layout.operator("vr_avatar.solve_stream", icon='PLAY')
        if solve.has_cache:
            if solve.cache_stale:
                layout.label(text="Settings changed: solve again", icon='ERROR')
            if (fps := solve_cache.made_at_another_rate(context.scene)) is not None:
                layout.label(text=f"Solved at {fps:g} fps and the scene now plays at {scene_fps(context.scene):g} fps: "
                             "solve again", icon='ERROR')
            layout.prop(solve, "preview")
            draw_calibration(layout, solve.found_calibration)
            layout.operator("vr_avatar.clean_solve", icon='MOD_SMOOTH')
            bake = context.scene.vr_avatar.bake
            for name in ("root_motion", "frame_range", "only_mapped", "push_to_nla"):
                layout.prop(bake, name)
            layout.operator("vr_avatar.bake_action", icon='ACTION')
        layout.operator("vr_avatar.bake_batch", icon='DOCUMENTS')
        row = layout.row(align=True)
        for source, text in (('BLENDER_VR', "Live Preview"), ('OPENXR', "Live Preview (OpenXR)")):
            row.operator("vr_avatar.preview_live", text=text, icon='VIEW_CAMERA').source = source
        if solve.report_path and solve.baked_quality.measured:
            draw_baked_quality(layout, solve.baked_quality, bpy.path.basename(solve.report_path))


def draw_baked_quality(layout, quality, report: str) -> None:
    """The last bake's avatar figures (VRAvatarBakedQuality), its warnings and the report's file name."""
    box = layout.box()
    box.label(text="Baked avatar, measured in Blender", icon='GRAPH')
    for key, label, unit in AVATAR_FIGURES:
        value = getattr(quality, key)
        if not math.isnan(value):
            box.label(text=f"{label}: {value * (100.0 if unit.startswith('%') else 1.0):.1f}{unit}")
    low, high = quality.hips_height_ratio
    box.label(text=f"Hips height: {low:.2f}–{high:.2f} of rest")
    for warning in quality.warnings:
        box.label(text=warning.text[0].upper() + warning.text[1:], icon='ERROR')
    box.label(text=report)


def draw_calibration(layout, found) -> None:
    """The last solve's device calibration (VRAvatarCalibration): height, span, each grip's offset and tilt."""
    if not found.solved:
        return
    box = layout.box()
    if not found.found:
        box.label(text="No calibration gesture found: default grip assumed", icon='INFO')
        return
    box.label(text=f"Calibrated from the {found.pose}-pose at {found.pose_s[0]:.1f}–{found.pose_s[1]:.1f} s",
              icon='CHECKMARK')
    box.label(text=f"Standing HMD height {found.standing_hmd_height_m:.2f} m, arm span {found.arm_span_m:.2f} m")
    for side, offset, tilt in zip(("Left", "Right"), (found.left_offset_m, found.right_offset_m), found.grip_tilt_deg):
        where = "not measured" if math.isnan(offset[0]) else ", ".join(f"{100 * v:.1f}" for v in offset) + " cm"
        box.label(text=f"{side} grip from wrist: {where}; tilted {tilt:.0f}°")


classes = (VRAVATAR_UL_bone_map, VRAVATAR_UL_databases, VRAVATAR_UL_takes, VIEW3D_PT_vr_avatar, VIEW3D_PT_vr_avatar_library, VIEW3D_PT_vr_avatar_stream, VIEW3D_PT_vr_avatar_solve)


register, unregister = bpy.utils.register_classes_factory(classes)
