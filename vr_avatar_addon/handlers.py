"""Handlers: scrubbing the timeline poses the target armature from the cached solve; Save As keeps the add-on's
relative paths (Save Copy leaves the open file's as they were)."""
import os

import bpy
import numpy as np
from bpy.app.handlers import persistent

from . import root_motion, solve_cache
from .rotation_modes import set_rotations


def pose_frame(obj, frame: solve_cache.CachedFrame) -> None:
    """Pose `obj`'s bones with a cached frame: every bone's rotation (in its own rotation mode), location and scale."""
    pose_bones = obj.pose.bones
    row = {name: k for k, name in enumerate(frame.bones)}
    order = np.array([row[pose_bone.name] for pose_bone in pose_bones])
    quaternion = np.array([pose_bone.rotation_mode == 'QUATERNION' for pose_bone in pose_bones])
    if quaternion.all():
        pose_bones.foreach_set("rotation_quaternion", frame.basis[order].astype(np.float32).ravel())
    else:  # each bone in its own mode, never switched
        set_rotations(pose_bones, frame.basis[order])
    for pose_bone, location, scale in zip(pose_bones, frame.locations[order], frame.scales[order]):
        pose_bone.location, pose_bone.scale = location.tolist(), scale.tolist()


@persistent
def pose_from_cache(scene, _depsgraph=None):
    """frame_change_post: show the cached solve on its armature while the preview is on (the armature where an Object
    root-motion bake animating it was keyed from: the solve's bones carry the travel that bake gives the object; where
    its own action or NLA strips animate its transform otherwise, where the solve was made with it, as a bake keys
    it)."""
    settings = getattr(scene, "vr_avatar", None)
    if settings is None or not settings.solve.preview:
        return
    frame = solve_cache.cached_frame(scene, scene.frame_current)
    obj = solve_cache.cached_object(scene) if frame else None
    if obj is None or obj.type != 'ARMATURE' or set(frame.bones) != set(obj.pose.bones.keys()):
        return
    pose_frame(obj, frame)
    root_motion.restore_placement(obj)
    for prop, value in root_motion.solved_placement(obj, frame.object_transform):
        setattr(obj, prop, value.tolist())


def relative_paths(scene):
    """(owner, property) of every file path the add-on keeps on a scene."""
    settings = scene.vr_avatar
    yield settings.stream, "stream_path"
    yield settings.stream, "record_path"
    yield settings.library, "mocap_path"
    yield settings.solve, "report_path"
    for item in settings.library.databases:
        yield item, "path"
    for take in settings.stream.takes:
        yield take, "path"


def rebased(path: str, old_folder: str, new_folder: str) -> str:
    """A '//'-relative path from a .blend in `old_folder` as it reads from one in `new_folder` (absolute where
    no relative path joins them, as across drives)."""
    if not path.startswith("//"):
        return path
    absolute = os.path.normpath(os.path.join(old_folder, path[2:]))
    try:
        return "//" + os.path.relpath(absolute, new_folder).replace(os.sep, "/")
    except ValueError:
        return absolute


_rewritten = {}
"""What the last save_pre rewrote: the open file's path then, and (scene, path's place, old value) per path."""


@persistent
def keep_paths_on_save_as(filepath, _=None):
    """save_pre: a .blend saved into another folder keeps its streams, takes, databases and reports (relative paths are
    rewritten from the new folder; Blender remaps its own data's paths, not an add-on's)."""
    _rewritten.clear()
    if not bpy.data.filepath or not filepath:
        return
    old_folder, new_folder = os.path.dirname(bpy.data.filepath), os.path.dirname(os.path.abspath(filepath))
    if os.path.normpath(old_folder) == os.path.normpath(new_folder):
        return
    _rewritten.update(filepath=bpy.data.filepath, paths=[])
    for scene in bpy.data.scenes:
        if getattr(scene, "vr_avatar", None) is None:
            continue
        for place, (owner, name) in enumerate(relative_paths(scene)):
            value = owner.get(name)  # only paths the user set; written past the update callbacks (same files)
            if isinstance(value, str) and rebased(value, old_folder, new_folder) != value:
                owner[name] = rebased(value, old_folder, new_folder)
                _rewritten["paths"].append((scene.name, place, value))


@persistent
def restore_paths_after_save_copy(_filepath=None, _=None):
    """save_post: after Save Copy (the open file is still the old one) its paths are put back as they were."""
    if _rewritten and bpy.data.filepath == _rewritten["filepath"]:
        for scene_name, place, value in _rewritten["paths"]:
            scene = bpy.data.scenes.get(scene_name)
            owner, name = list(relative_paths(scene))[place]
            owner[name] = value
    _rewritten.clear()


HANDLERS = ((bpy.app.handlers.frame_change_post, pose_from_cache), (bpy.app.handlers.save_pre, keep_paths_on_save_as),
            (bpy.app.handlers.save_post, restore_paths_after_save_copy))


def register():
    for handlers, handler in HANDLERS:
        if handler not in handlers:
            handlers.append(handler)


def unregister():
    for handlers, handler in HANDLERS:
        if handler in handlers:
            handlers.remove(handler)
