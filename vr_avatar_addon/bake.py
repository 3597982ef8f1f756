"""Bake: the cached solve written onto the target armature as a new action, the rig left as it was.

Each bone is keyed in its own rotation mode (quaternion, an Euler order, or axis-angle; Euler angles continuous
across frames), so the animator's other actions still pose it; every bone's rotation is keyed, its location and
scale where the solve moves them off rest, and also, at rest, any channel an NLA strip under the new action
animates, or the armature's active action (which the new one replaces), so nothing from below or before leaks
into the result (the object's transform, where they animate it, is keyed where the solve was made with it); a
channel that holds one value (*Fit to User*'s scale) gets one key. A rest pose changed since the solve is refused.
Then the baked avatar is measured in Blender (avatar_quality), hidden or not, and the report written beside the
.blend: named after the armature, or, for a bake given its action's name (a batch's pair), after the action, so that
each of a batch's actions keeps its own; bones that constraints or drivers pose otherwise than the keys are named.
"""
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path

import bpy
import numpy as np

from . import avatar, avatar_quality, core, keyframes, root_motion, solve_cache
from .armature import object_by_uid
from .bone_map import mapping_for
from .errors import VRAvatarError
from .rotation_modes import rotation_property, rotation_values
from .scene_solve import changed_rest_bone, edits_taken_in, rest_bones
from .scene_timing import scene_fps

MEASURED_FRAMES = 300
"""The bake's avatar quality report measures at most this many frames, evenly spread."""
REST_TOLERANCE = 1e-4
"""A location (in the bone's units, over the bone's length) or scale channel this close to rest stays unkeyed."""


class Bake:
    """One bake in steps, so that it can run beside Blender: the new action is keyed at once (`start`), the avatar
    measured a frame at a time (`step`), the report written at the end (`finish`); `cancel` takes back what
    `start` made and changed."""

    def __init__(self, context, name: str | None = None, push_to_nla: bool | None = None):
        """The checks before anything is made (VRAvatarError), then the new action (`name`, else "<armature> VR
        Avatar") on the armature, keyed as the scene's bake settings say (`push_to_nla`, where given, in place of
        the setting); a bake given its `name` writes its report under its action's name."""
        scene = self.scene = context.scene
        obj = self.obj = bake_target(context)
        self.armature, self.armature_uid = obj.name, obj.session_uid
        settings = self.settings = scene.vr_avatar.bake
        cache = self.cache = baked_range(solve_cache.load(scene), scene, settings.frame_range)
        if (fps := solve_cache.made_at_another_rate(scene)) is not None:
            raise VRAvatarError(f"The cached solve was made at {fps:g} fps and the scene now plays at "
                                f"{scene_fps(scene):g} fps: solve again (or set the scene's frame rate back)")
        edits_taken_in(obj)
        if set(cache.bones) != set(obj.data.bones.keys()):
            raise VRAvatarError(f"The cached solve is for armature '{cache.armature}', which has other bones now: "
                                "solve again")
        if cache.rest is not None and (bone := changed_rest_bone(rest_bones(obj), cache.rest)) is not None:
            raise VRAvatarError(f"The rest pose of bone '{bone}' of armature '{obj.name}' changed since the solve: "
                                "solve again")
        mapping = mapping_for(scene.vr_avatar, obj)
        root_motion.restore_placement(obj)
        with held_where_solved(context, obj, cache):
            self.channels = bake_channels(cache, obj, settings.root_motion, mapping, settings.only_mapped)
        self.overridden = overridden(obj, self.channels)
        self.had_travel = root_motion.TRAVEL_PROPERTY in obj
        root_motion.prepare(obj, settings.root_motion)
        self.before = keyframes.ActiveAction(obj)
        self.preview, self.frame = scene.vr_avatar.solve.preview, scene.frame_current
        self.name = name or f"{obj.name} VR Avatar"
        self.named = name is not None
        self.pushed = settings.push_to_nla if push_to_nla is None else push_to_nla
        measured = (bake_channels(cache, obj, 'HIPS', mapping, settings.only_mapped)
                    if settings.root_motion == 'IN_PLACE' else self.channels)  # measured where the body travels
        placement = np.array(obj.matrix_world)
        self.action, self.previous = keyframes.new_action(self.name, obj, measured, cache.frame_start)
        if settings.root_motion == 'OBJECT':
            root_motion.keep_placement(self.action, placement)
        scene.vr_avatar.solve.preview = False  # the new action drives the armature from here on
        self.measuring = measure_steps(scene, obj, cache)
        self.quality = None

    def step(self) -> float | None:
        """Measure one more frame: the share measured, or None when all are (`quality` is then set)."""
        try:
            return next(self.measuring)
        except StopIteration as done:
            self.quality = done.value
            return None

    def finish(self, report) -> None:
        """The report beside the .blend and the messages (`report` is the operator's)."""
        while self.quality is None:
            self.step()
        if self.settings.root_motion == 'IN_PLACE':  # the measured action gives way to the one kept in place
            bpy.data.actions.remove(self.action)  # first, so that the new one takes its name
            self.action = keyframes.new_action(self.name, self.obj, self.channels, self.cache.frame_start)[0]
        if self.pushed:
            self.push_to_nla()
        scene, obj, cache, action, quality = self.scene, self.obj, self.cache, self.action, self.quality
        if self.overridden:
            quality["warnings"].append(self.overridden)
        kept = f"; '{self.previous.name}' is kept (fake user)" if self.previous else ""
        avatar_quality.keep(scene.vr_avatar.solve.baked_quality, quality["figures"], quality["warnings"])
        try:
            written = write_report(scene, obj, cache, quality, action.name if self.named else None)
        except (OSError, ValueError) as error:
            report({'WARNING'}, f"Baked {cache.frames} frames into new action '{action.name}'{kept}; the report was "
                                f"not written: {error}")
        else:
            scene.vr_avatar.solve.report_path = written
            report({'INFO'}, f"Baked {cache.frames} frames into new action '{action.name}'{kept}; report {written}")
        for warning in quality["warnings"]:
            report({'WARNING'}, f"On '{obj.name}', {warning}")

    def push_to_nla(self) -> None:
        """The new action as a strip of its own NLA track, named after it; the armature's active action as it
        was before the bake."""
        animation = self.obj.animation_data
        slot = animation.action_slot
        track = animation.nla_tracks.new()
        track.name = self.action.name
        strip = track.strips.new(self.action.name, int(self.cache.frame_start), self.action)
        if hasattr(strip, "action_slot"):
            strip.action_slot = slot
        self.before.restore()

    def lost(self) -> str | None:
        """What took the armature from under the bake since it began, in words: deleted from the scene, removed from
        the file, or read back by undo (which keeps its session_uid) or another file; None while it is there."""
        try:
            return None if self.scene in self.obj.users_scene else f"armature '{self.obj.name}' was deleted"
        except ReferenceError:  # its data freed
            undone = object_by_uid(self.armature_uid) is not None
            return f"armature '{self.armature}' was {'undone' if undone else 'removed'}"

    def cancel(self) -> None:
        """Take the bake back: the new action removed, the armature's action, its fake user, its custom properties,
        the preview and the scene's frame as they were; of a bake whose armature was freed, what is left."""
        try:
            self.obj.name
        except ReferenceError:
            self._let_go()
            return
        self.measuring.close()
        bpy.data.actions.remove(self.action)
        if not self.had_travel and root_motion.TRAVEL_PROPERTY in self.obj:
            del self.obj[root_motion.TRAVEL_PROPERTY]
        self.before.restore()
        animation = self.obj.animation_data
        if not self.before.had_animation and animation is not None and not animation.nla_tracks:
            self.obj.animation_data_clear()
        self.scene.vr_avatar.solve.preview = self.preview
        self.scene.frame_set(self.frame)

    def _let_go(self) -> None:
        """Take back what is left of a bake whose armature was freed: nothing where undo or another file read the
        data back as it was before the bake; where the armature was removed, its action, the previous action's fake
        user, the preview and the scene's frame."""
        with suppress(ReferenceError):
            self.measuring.close()  # puts the scene's frame back
        with suppress(ReferenceError):
            bpy.data.actions.remove(self.action)
            if self.before.action is not None:
                self.before.action.use_fake_user = self.before.fake_user
            self.scene.vr_avatar.solve.preview = self.preview


def bake(context, report) -> None:
    """Bake the scene's cached solve in one go (module docstring); `report` is the operator's. VRAvatarError for
    what stops it, before anything is made."""
    Bake(context).finish(report)


def bake_target(context):
    """The armature the scene's cached solve bakes onto; VRAvatarError saying what stops a bake (no solve, the
    armature gone, linked from a library without an editable override, or in NLA tweak mode)."""
    name = solve_cache.cached_armature(context.scene)
    if name is None:
        raise VRAvatarError("Nothing to bake: solve the stream first")
    obj = solve_cache.cached_object(context.scene)
    if obj is None or context.scene not in obj.users_scene:  # deleted, the scene's settings may still refer to it
        raise VRAvatarError(f"The cached solve is for armature '{name}', which is gone: solve again")
    if obj.library is not None:  # an override's armature data stays linked: the object carries the action
        raise VRAvatarError(f"Armature '{name}' is linked from {obj.library.filepath}: make a library override "
                            "(Object › Library Override › Make) to bake onto it; a bake on linked data would not be "
                            "saved")
    if obj.override_library is not None and obj.override_library.is_system_override:
        raise VRAvatarError(f"Armature '{name}' is a library override that is not editable: make it editable "
                            "(Outliner › right-click › Library Override › Make Editable) to bake onto it")
    if obj.animation_data is not None and obj.animation_data.use_tweak_mode:
        raise VRAvatarError(f"Armature '{name}' is in NLA tweak mode: leave it (Tab in the NLA editor) to bake a new "
                            "action")
    return obj


def object_transform_channels(obj, keyed: set[str], underneath: set[str]) -> list:
    """Channels holding the object's transform as it stands (one key each) where `underneath` (`placing_channels`)
    animates it and the bake does not key it: the replaced action's last value would stay, a strip of an Object
    root-motion bake would move it on."""
    channels = []
    for prop in ("location", rotation_property(obj.rotation_mode), "scale"):
        value = tuple(getattr(obj, prop))
        if prop not in keyed and any(f"{prop}[{i}]" in underneath for i in range(len(value))):
            channels.append((prop, np.array([value]), "Object Transforms"))
    return channels


@contextmanager
def held_where_solved(context, obj, cache):
    """The object's transform where the solve was made with it (`cache.object_transform`) wherever the action the
    bake replaces or NLA strips under it animate it, not where they leave it at the present frame; put back where
    it stood if what runs inside raises. A cache made by an earlier version leaves it as it stands."""
    solved = root_motion.solved_placement(obj, cache.object_transform)
    if not solved:
        yield
        return
    standing = [(prop, tuple(getattr(obj, prop))) for prop, _ in solved]
    for prop, value in solved:
        setattr(obj, prop, value.tolist())
    context.view_layer.update()
    try:
        yield
    except BaseException:
        for prop, value in standing:
            setattr(obj, prop, value)
        context.view_layer.update()
        raise


def baked_range(cache, scene, frame_range: str):
    """The cached solve over the frames a bake keys: all of it ('SOLVE'), or where it meets the scene's frame
    range ('SCENE'; VRAvatarError where they do not meet)."""
    if frame_range == 'SOLVE':
        return cache
    first = max(scene.frame_start - cache.frame_start, 0)
    last = min(scene.frame_end - cache.frame_start + 1, cache.frames)
    if last <= first:
        raise VRAvatarError(f"The scene's frame range {scene.frame_start}-{scene.frame_end} holds no frame of the "
                            f"solve ({cache.frame_start}-{cache.frame_start + cache.frames - 1})")
    kept = slice(first, last)
    return replace(cache, frame_start=cache.frame_start + first, basis=cache.basis[kept],
                   locations=cache.locations[kept], scales=cache.scales[kept], positions=cache.positions[kept],
                   wrist_targets=cache.wrist_targets[kept], head_targets=cache.head_targets[kept])


def bake_channels(cache, obj, mode: str = 'HIPS', mapping: dict | None = None, only_mapped: bool = False) -> list:
    """Action channels of a cached solve on `obj` (module docstring), the travel where root motion `mode` puts it
    (`mapping`: joint -> bone, for the hips; `only_mapped`: the mapped bones' channels alone, those of the bones
    above the hips, which place the body, and of the others those the replaced action keys off rest, which would
    keep its last value): (data path, values (F, N), group)."""
    hips = (mapping or {}).get("hips")
    basis, locations, scales, extra = root_motion.with_root_motion(obj, cache, mode, hips)
    kept = set(mapping.values()) if only_mapped and mapping else set(cache.bones)
    above = {bone.name for bone in obj.data.bones[hips].parent_recursive} if hips and hips in obj.data.bones else set()
    kept |= above  # they place the whole body: keyed in full, whatever pose they were left in
    if mode == 'ROOT_BONE':
        kept.add(root_motion.top_of_chain(obj, hips))
    below = keyframes.animated_channels(keyframes.strip_actions(obj))
    action = obj.animation_data.action if obj.animation_data is not None else None
    replaced = keyframes.animated_channels([action])
    underneath = below | replaced
    stale = {channel.rsplit("[", 1)[0] for channel in keyed_off_rest(action) - below}
    channels = []
    for j, name in enumerate(cache.bones):
        made = bone_channels(obj, name, basis[:, j], locations[:, j], scales[:, j], name in above, underneath)
        channels += made if name in kept else [channel for channel in made if channel[0] in stale]
    keyed = {path for path, _, _ in extra}
    return channels + extra + object_transform_channels(obj, keyed, root_motion.placing_channels(obj))


def bone_channels(obj, name: str, basis, locations, scales, placing: bool, underneath: set[str]) -> list:
    """One bone's channels from its cached basis (F, 4), locations and scales (F, 3): its rotation, and its location
    and scale where they leave rest, where `underneath` animates them (keyed at rest there), or in full where it
    is `placing` the body."""
    path = f'pose.bones["{bpy.utils.escape_identifier(name)}"]'
    pose_bone, bone = obj.pose.bones[name], obj.data.bones[name]
    rotation, values = rotation_values(basis, pose_bone.rotation_mode)
    channels = [(f"{path}.{rotation}", values, name)]
    length = max(bone.length, 1e-6)
    for prop, values, rest, scale in (("location", locations, 0.0, length), ("scale", scales, 1.0, 1.0)):
        moved = np.abs(values - rest).max(axis=0) > REST_TOLERANCE * scale
        leaking = np.array([placing or f"{path}.{prop}[{i}]" in underneath for i in range(3)])
        if moved.any() or leaking.any():
            values = np.where(moved, values, rest)
            steady = np.ptp(values, axis=0).max() <= REST_TOLERANCE * scale  # one key holds it (Fit to User)
            channels.append((f"{path}.{prop}", values[:1] if steady else values, name))
    return channels


def rest_value(prop: str, index: int) -> float | None:
    """A transform property's value at rest at `index` (its last name: "location", ...); None where any value is (an
    axis-angle's axis) or the property is no transform."""
    if prop == "rotation_quaternion":
        return 1.0 if index == 0 else 0.0
    if prop == "rotation_axis_angle":
        return 0.0 if index == 0 else None
    return {"location": 0.0, "rotation_euler": 0.0, "scale": 1.0}.get(prop)


def keyed_off_rest(action) -> set[str]:
    """Transform channels (`path[index]`) the action keys away from rest somewhere (a quaternion's sign aside)."""
    found = set()
    for curve in keyframes.action_fcurves(action) if action is not None else ():
        rest = rest_value(curve.data_path.rsplit(".", 1)[-1], curve.array_index)
        if rest is None or not len(curve.keyframe_points):
            continue
        co = np.empty(2 * len(curve.keyframe_points), dtype=np.float32)
        curve.keyframe_points.foreach_get("co", co)
        values = np.abs(co[1::2]) if curve.data_path.endswith("rotation_quaternion") else co[1::2]
        if np.abs(values - rest).max() > REST_TOLERANCE:
            found.add(f"{curve.data_path}[{curve.array_index}]")
    return found


def overridden(obj, channels) -> str | None:
    """A warning naming the bones the bake keys whose unmuted constraints, or drivers on their transform, pose them
    otherwise than the keys; None where there are none."""
    keyed = {path.rsplit(".", 1)[0] for path, _, _ in channels if path.startswith("pose.bones[")}
    bones = [pose_bone for pose_bone in obj.pose.bones
             if f'pose.bones["{bpy.utils.escape_identifier(pose_bone.name)}"]' in keyed]
    constrained = [b.name for b in bones if any(not c.mute and c.influence > 0.0 and c.is_valid for c in b.constraints)]
    transforms = {f'pose.bones["{bpy.utils.escape_identifier(b.name)}"].{prop}': b.name for b in bones
                  for prop in ("location", rotation_property(b.rotation_mode), "scale")}
    drivers = obj.animation_data.drivers if obj.animation_data is not None else ()
    driven = list(dict.fromkeys(transforms[d.data_path] for d in drivers if not d.mute and d.data_path in transforms))
    named = [f"{kind} on " + ", ".join(f"'{name}'" for name in names)
             for kind, names in (("constraints", constrained), ("drivers", driven)) if names]
    if not named:
        return None
    return (f"{' and '.join(named)} pose those bones otherwise than the baked keys: mute them to see the bake as "
            "solved")


def set_mode(obj, mode: str) -> None:
    """Switch `obj` (active or not) into `mode`."""
    with bpy.context.temp_override(active_object=obj, object=obj):
        bpy.ops.object.mode_set(mode=mode)


@contextmanager
def posed(scene, obj):
    """`obj` shown as posed while it is measured (out of Edit Mode, its armature in Pose Position, evaluated with its
    skinned meshes: `evaluated`), put back after."""
    mode, position = obj.mode, obj.data.pose_position
    if mode == 'EDIT':
        set_mode(obj, 'OBJECT')
    if position != 'POSE':
        obj.data.pose_position = 'POSE'
    try:
        with evaluated(scene, [obj, *avatar.skinned_meshes(obj)]):
            yield
    finally:
        if position != 'POSE':
            obj.data.pose_position = position
        if mode == 'EDIT':
            set_mode(obj, 'EDIT')


@contextmanager
def evaluated(scene, objects):
    """`objects` evaluated by `scene`'s depsgraph, which leaves out one disabled in viewports or in no enabled
    collection of the view layer (excluded, or disabled in viewports): such an object enabled, and one not visible
    linked into the scene's own collection too (the master collection is always enabled), while inside; put back
    after."""
    disabled = [obj for obj in objects if obj.hide_viewport]
    for obj in disabled:
        obj.hide_viewport = False
    outside = [obj for obj in objects if not obj.visible_get() and obj.name not in scene.collection.objects]
    for obj in outside:
        scene.collection.objects.link(obj)
    try:
        yield
    finally:
        for obj in outside:
            with suppress(ReferenceError, RuntimeError):
                scene.collection.objects.unlink(obj)
        for obj in disabled:
            with suppress(ReferenceError):
                obj.hide_viewport = True


def measure_steps(scene, obj, cache):
    """The baked avatar measured in Blender (avatar_quality) as posed, a frame at a time: a generator yielding the
    share measured and returning the figures and warnings; the scene is put back on its frame, the armature in its
    mode and pose position."""
    current = scene.frame_current
    step = max(1, -(-cache.frames // MEASURED_FRAMES))
    index = np.arange(0, cache.frames, step)
    tracked = np.stack([np.isfinite(cache.head_targets).all(-1), *np.isfinite(cache.wrist_targets).all(-1).T], -1)
    mapping = mapping_for(scene.vr_avatar, obj)
    try:
        with posed(scene, obj):
            figures, _ = yield from avatar_quality.measure_steps(
                obj, mapping, cache.head_targets[index], cache.wrist_targets[index], tracked[index],
                scene_fps(scene) / step, cache.frame_start + index)
    finally:
        scene.frame_set(current)
    return {"figures": figures, "warnings": avatar_quality.warnings(figures)}


def write_report(scene, obj, cache, quality: dict, action: str | None = None) -> str:
    """The quality report's plots and JSON beside the .blend (or in Blender's temporary folder if unsaved), with
    the baked avatar's own figures under "avatar": `<blend>.<armature>.report.*`, or `<blend>.<action>.report.*`
    where the bake's `action` is given."""
    folder = Path(bpy.path.abspath("//")) if bpy.data.filepath else Path(bpy.app.tempdir)
    stem = folder / f"{Path(bpy.data.filepath).stem or 'untitled'}.{bpy.path.clean_name(action or obj.name)}"
    series = {k: np.array(v, dtype=float) for k, v in cache.report["series"].items()}
    figures = {**cache.report["figures"], "avatar": quality["figures"], "avatar_warnings": quality["warnings"]}
    title = f"VR Avatar bake of '{obj.name}'" + (f" into '{action}'" if action else "")
    written = core.quality.report.write_report(stem, series, figures, title)
    return written.get("plot", written["json"])
