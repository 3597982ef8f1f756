"""Stream objects: a three-point stream as three animated empties and back, and VR session poses as a stream.

The empties carry the poses in Blender's frame (+Z up); the conversion to and from core's frame
goes through `axes`. Every object, action and collection made here carries the custom property
TAG, so replacing a stream removes exactly what the add-on made and nothing else.
"""
import bpy
import numpy as np

from . import core
from .axes import y_up_from_z_up, y_up_rotation_from_z_up, z_up_from_y_up, z_up_rotation_from_y_up
from .keyframes import new_action

TAG = "vr_avatar_stream"
TRACKED = "tracked"
TIME_START = "vr_avatar_time_start"
FRAME_START = "vr_avatar_frame_start"
LOADED_FPS = "vr_avatar_fps"
"""The scene frame of the first sample and the scene's rate, as loaded (the empties' custom properties)."""
COLLECTION_NAME = "VR Stream"
# Per device in core.files.stream.DEVICES order: object name, empty display type, display size (metres).
EMPTIES = (("VR HMD", 'ARROWS', 0.15), ("VR Left Controller", 'ARROWS', 0.1), ("VR Right Controller", 'ARROWS', 0.1))
CONSTANT = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["CONSTANT"].value


def held_poses(positions, rotations, tracked):
    """(F, 3) positions and (F, 4) rotations with each untracked frame holding the last tracked pose.

    Frames before the first tracked one take the first tracked pose; a device never tracked sits at
    the origin with the identity rotation.
    """
    if not tracked.any():
        return np.zeros((len(tracked), 3)), np.tile([1.0, 0.0, 0.0, 0.0], (len(tracked), 1))
    source = core.files.stream.held_samples(tracked)
    return positions[source], rotations[source]


def other_scenes_collections(scene) -> list:
    """The collections the other scenes show (a Linked Copy shows this scene's too)."""
    return [c for other in bpy.data.scenes if other != scene for c in other.collection.children_recursive]


def _stream_collection(scene):
    """The add-on's stream collection in the scene, made and linked if it has none of its own (one it shares with
    another scene holds that scene's empties)."""
    shared = other_scenes_collections(scene)
    collection = next((c for c in scene.collection.children_recursive if c.get(TAG) and c not in shared), None)
    if collection is None:
        collection = bpy.data.collections.new(COLLECTION_NAME)
        collection[TAG] = 1
        scene.collection.children.link(collection)
    return collection


def remove_stream_empties(scene) -> int:
    """Take the scene's stream empties made by the add-on out of it; returns how many empties. Those another scene
    shows too (a Linked Copy's) are left to it, their collection unlinked from this scene; the others are removed
    with their actions."""
    shared = other_scenes_collections(scene)
    for parent in [scene.collection, *scene.collection.children_recursive]:
        for child in list(parent.children):
            if child.get(TAG) and child in shared and parent not in shared:
                parent.children.unlink(child)
    empties = [obj for obj in scene.objects if obj.get(TAG)]
    for obj in empties:
        if len(obj.users_scene) > 1:
            continue
        action = obj.animation_data.action if obj.animation_data else None
        bpy.data.objects.remove(obj)
        if action is not None and action.get(TAG) and action.users == 0:
            bpy.data.actions.remove(action)
    return len(empties)


def empties_from_stream(scene, stream, frame_start: int, fps: float):
    """Three new empties (HMD, left, right) in the "VR Stream" collection animated by `stream`, one frame per sample.

    stream: a core ThreePointStream at the scene's rate `fps` (core's frame). Each empty is keyed with
    location, rotation_quaternion and a 0/1 "tracked" custom property; untracked frames hold the
    last tracked pose. Returns the three objects.
    """
    collection = _stream_collection(scene)
    positions = z_up_from_y_up(stream.positions)
    rotations = z_up_rotation_from_y_up(stream.rotations)
    empties = []
    for device, (name, display_type, size) in enumerate(EMPTIES):
        tracked = stream.tracked[:, device]
        location, rotation = held_poses(positions[:, device], rotations[:, device], tracked)
        rotation = core.math.quat.unroll(core.math.quat.normalize(rotation))
        obj = bpy.data.objects.new(name, None)
        obj.empty_display_type, obj.empty_display_size = display_type, size
        obj.rotation_mode = 'QUATERNION'
        obj[TAG] = 1
        obj[TRACKED] = 1
        obj[TIME_START] = float(stream.times[0])
        obj[FRAME_START] = int(frame_start)
        obj[LOADED_FPS] = float(fps)
        collection.objects.link(obj)
        action, _ = new_action(f"{name} Stream", obj, [
            ("location", location, "Transform"),
            ("rotation_quaternion", rotation, "Transform"),
            (f'["{TRACKED}"]', tracked.astype(float), "Tracking"),
        ], frame_start)
        action[TAG] = 1
        tracked_curve = action.layers[0].strips[0].channelbag(action.slots[0]).fcurves.find(f'["{TRACKED}"]')
        tracked_curve.keyframe_points.foreach_set("interpolation", np.full(len(stream), CONSTANT, dtype=np.int32))
        empties.append(obj)
    return empties


def stream_from_empties(head, left, right, frames, fps: float, time_start: float = 0.0):
    """A core ThreePointStream sampled from the three objects' world poses at `frames` (core's frame).

    Times are time_start + (frame - frames[0]) / fps. A frame is untracked where the object's
    "tracked" custom property reads 0 (objects without it are always tracked).
    """
    frames = np.asarray(frames, dtype=int)
    positions, rotations, tracked = device_poses((head, left, right), frames)
    return stream_from_blender_poses(time_start + (frames - frames[0]) / fps, positions, rotations, tracked)


def device_poses(devices, frames):
    """(positions (F, D, 3), rotations (F, D, 4), tracked (F, D)) of the objects at `frames`, Blender's frame.

    Objects posed by their own keys alone (`keyed_alone`) are read from their f-curves; otherwise every frame is
    set and the world matrices read, the scene's current frame restored afterwards.
    """
    frames = np.asarray(frames, dtype=int)
    if all(keyed_alone(obj) for obj in devices):
        poses = [keyed_pose(obj, frames) for obj in devices]
        return tuple(np.stack([p[k] for p in poses], axis=1) for k in range(3))
    scene = bpy.context.scene
    positions = np.empty((len(frames), len(devices), 3))
    rotations = np.empty((len(frames), len(devices), 4))
    tracked = np.ones((len(frames), len(devices)), dtype=bool)
    current = scene.frame_current, scene.frame_subframe
    try:
        for i, frame in enumerate(frames):
            scene.frame_set(int(frame))
            for device, obj in enumerate(devices):
                location, rotation, _ = obj.matrix_world.decompose()
                positions[i, device] = location
                rotations[i, device] = rotation
                tracked[i, device] = bool(obj.get(TRACKED, 1))
    finally:
        scene.frame_set(current[0], subframe=current[1])
    return positions, rotations, tracked


KEYED_ALONE_PATHS = {"location", "rotation_quaternion", f'["{TRACKED}"]'}
"""What a stream empty's own keys may animate for its pose to be read from them."""


def slot_fcurves(obj) -> dict:
    """{(data_path, index): f-curve} of the object's own slot in its active action, muted curves left out."""
    animation = obj.animation_data
    if animation is None or animation.action is None or animation.action_slot is None:
        return {}
    curves = {}
    for layer in animation.action.layers:
        for strip in layer.strips:
            channelbag = strip.channelbag(animation.action_slot)
            if channelbag is not None:
                curves.update({(c.data_path, c.array_index): c for c in channelbag.fcurves if not c.mute})
    return curves


def keyed_alone(obj) -> bool:
    """Whether the object's world pose is its own location and quaternion, keyed or set: no parent, constraints,
    delta transforms, drivers or NLA strips, and its keys animate nothing else."""
    animation = obj.animation_data
    return (obj.parent is None and len(obj.constraints) == 0 and obj.rotation_mode == 'QUATERNION'
            and tuple(obj.delta_location) == (0.0, 0.0, 0.0)
            and tuple(obj.delta_rotation_quaternion) == (1.0, 0.0, 0.0, 0.0)
            and (animation is None or (len(animation.drivers) == 0 and len(animation.nla_tracks) == 0))
            and all(path in KEYED_ALONE_PATHS for path, _ in slot_fcurves(obj)))


def keyed_pose(obj, frames):
    """(positions (F, 3), unit quaternions (F, 4), tracked (F,)) of a `keyed_alone` object: its curves evaluated at
    `frames`, its set values where a channel has none."""
    curves = slot_fcurves(obj)

    def channel(path: str, values) -> np.ndarray:
        return np.stack([curve_values(curves[path, i], frames) if (path, i) in curves
                         else np.full(len(frames), float(v)) for i, v in enumerate(values)], axis=-1)

    positions = channel("location", obj.location)
    rotations = channel("rotation_quaternion", obj.rotation_quaternion)
    rotations /= np.maximum(np.linalg.norm(rotations, axis=-1, keepdims=True), 1e-12)
    tracked = channel(f'["{TRACKED}"]', [obj.get(TRACKED, 1)])[:, 0] != 0.0
    return positions, rotations, tracked


def curve_values(curve, frames) -> np.ndarray:
    """(F,) the f-curve's values at whole `frames`: a key's own value where one key sits on the frame (a curve passes
    through its keys whatever their interpolation), `evaluate` elsewhere and on curves with modifiers."""
    points = curve.keyframe_points
    co = np.empty(2 * len(points))
    points.foreach_get("co", co)
    keys, values = co[0::2], co[1::2]
    result = np.empty(len(frames))
    on_key = np.zeros(len(frames), dtype=bool)
    if len(keys) and len(curve.modifiers) == 0 and np.all(np.diff(keys) > 0.0):
        index = np.clip(np.searchsorted(keys, frames), 0, len(keys) - 1)
        on_key = keys[index] == frames
        result[on_key] = values[index[on_key]]
    result[~on_key] = [curve.evaluate(float(f)) for f in frames[~on_key]]
    return result


def stream_from_blender_poses(times, positions, rotations, tracked=None):
    """A core ThreePointStream from poses in Blender's frame: times (N,), positions (N, 3, 3), rotations (N, 3, 4).

    A device is untracked where `tracked` is False, its pose is not finite or its quaternion is
    zero; its pose is NaN there.
    """
    positions = np.asarray(positions, dtype=float)
    rotations = np.asarray(rotations, dtype=float)
    norms = np.linalg.norm(rotations, axis=-1)
    valid = np.isfinite(positions).all(axis=-1) & np.isfinite(norms) & (norms > 1e-6)
    if tracked is not None:
        valid &= np.asarray(tracked, dtype=bool)
    core_positions = y_up_from_z_up(positions)
    core_rotations = y_up_rotation_from_z_up(rotations / np.where(valid, norms, 1.0)[..., None])
    core_positions[~valid] = np.nan
    core_rotations[~valid] = np.nan
    return core.files.stream.ThreePointStream(np.asarray(times, dtype=float), core_positions, core_rotations, valid)


def stream_from_xr_poses(times, positions, rotations):
    """A core ThreePointStream from poses sampled from Blender's VR session (see stream_from_blender_poses).

    A pose exactly at the origin with the identity rotation is what the session reports for a
    device it has not seen: untracked.
    """
    positions = np.asarray(positions, dtype=float)
    rotations = np.asarray(rotations, dtype=float)
    unseen = (positions == 0.0).all(axis=-1) & (rotations == [1.0, 0.0, 0.0, 0.0]).all(axis=-1)
    return stream_from_blender_poses(times, positions, rotations, ~unseen)


def xr_poses(context, session_state):
    """The viewer pose and both controllers' grip poses now, Blender's frame: positions (3, 3), rotations (3, 4).

    Controller 0 is the left hand and 1 the right, the order of the user paths of the grip pose
    action in the VR Scene Inspection add-on's default action map.
    """
    positions = [session_state.viewer_pose_location] + [
        session_state.controller_grip_location_get(context, index) for index in (0, 1)]
    rotations = [session_state.viewer_pose_rotation] + [
        session_state.controller_grip_rotation_get(context, index) for index in (0, 1)]
    return np.array(positions, dtype=float), np.array(rotations, dtype=float)
