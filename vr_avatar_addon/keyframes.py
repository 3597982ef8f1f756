"""Keyframes: new actions written in bulk (one `foreach_set` per f-curve), never editing an existing one.

Blender 4.4+ stores f-curves in layered actions: action → slot (which ID it animates) → layer →
keyframe strip → channelbag → f-curves. Everything the add-on animates (baked armatures, stream
empties) goes through `new_action`, so existing actions are never touched.
"""
import bpy
import numpy as np

from .compat import new_fcurve

LINEAR = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value


def new_action(name: str, owner, channels, frame_start: int):
    """A new action on `owner` (an object) holding `channels`, keyed at frame_start, frame_start + 1, ...

    channels: iterable of (data_path, values (F, N), group): one f-curve per column of values.
    The owner's previous action, if any, is kept with a fake user (it is not lost when saving) and
    returned beside the new one so the caller can report it.
    """
    action = bpy.data.actions.new(name)
    slot = action.slots.new(id_type='OBJECT', name=owner.name)
    strip = action.layers.new("Layer").strips.new(type='KEYFRAME')
    channelbag = strip.channelbag(slot, ensure=True)
    for data_path, values, group in channels:
        values = np.asarray(values, dtype=np.float32).reshape(len(values), -1)
        frames = np.arange(frame_start, frame_start + len(values), dtype=np.float32)
        for index in range(values.shape[1]):
            curve = new_fcurve(channelbag, data_path, index, group)
            points = curve.keyframe_points
            points.add(len(frames))
            points.foreach_set("co", np.column_stack([frames, values[:, index]]).ravel())
            points.foreach_set("interpolation", np.full(len(frames), LINEAR, dtype=np.int32))
            curve.update()
    animation = owner.animation_data or owner.animation_data_create()
    previous = animation.action
    if previous is not None:
        previous.use_fake_user = True
    animation.action = action
    animation.action_slot = slot
    return action, previous


def fcurve_values(action, owner, data_path: str, length: int) -> np.ndarray:
    """(F, length) keyed values of one channel of `owner`'s slot in `action` (for reading back)."""
    slot = next(s for s in action.slots if s.name_display == owner.name)  # new_action names it after the owner
    channelbag = action.layers[0].strips[0].channelbag(slot)
    curves = [channelbag.fcurves.find(data_path, index=i) for i in range(length)]
    if any(c is None for c in curves):
        raise KeyError(f"action '{action.name}' has no channel {data_path!r} for '{owner.name}'")
    columns = []
    for curve in curves:
        co = np.empty(2 * len(curve.keyframe_points), dtype=np.float32)
        curve.keyframe_points.foreach_get("co", co)
        columns.append(co[1::2])
    return np.stack(columns, axis=-1)


def action_fcurves(action):
    """Every f-curve of a layered action, over its layers, strips and slots."""
    for layer in action.layers:
        for strip in layer.strips:
            for channelbag in strip.channelbags:
                yield from channelbag.fcurves


def strip_actions(obj) -> list:
    """The actions of the armature's NLA strips."""
    animation = obj.animation_data
    if animation is None:
        return []
    return [strip.action for track in animation.nla_tracks for strip in track.strips if strip.action is not None]


def animated_channels(actions) -> set[str]:
    """Data paths (`path[index]`) the actions animate."""
    return {f"{c.data_path}[{c.array_index}]" for action in actions if action is not None
            for c in action_fcurves(action)}


class ActiveAction:
    """An object's animation as it was (its active action and slot, that action's fake user, whether it had
    animation data at all), to put back after a new action took its place."""

    def __init__(self, owner):
        animation = owner.animation_data
        self.owner, self.had_animation = owner, animation is not None
        self.action = animation.action if animation is not None else None
        self.slot = animation.action_slot if self.action is not None else None
        self.fake_user = bool(self.action is not None and self.action.use_fake_user)

    def restore(self) -> None:
        """The active action, its slot and its fake user as they were (no action where there was none)."""
        animation = self.owner.animation_data
        if animation is None:
            return
        animation.action = self.action
        if self.action is not None:
            animation.action_slot = self.slot
            self.action.use_fake_user = self.fake_user
