"""Handlers: scrubbing the timeline poses the target armature from the cached solve."""
import bpy
import numpy as np
from bpy.app.handlers import persistent

from . import solve_cache
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
    """frame_change_post: show the cached solve on its armature while the preview is on."""
    settings = getattr(scene, "vr_avatar", None)
    if settings is None or not settings.solve.preview:
        return
    frame = solve_cache.cached_frame(scene, scene.frame_current)
    obj = bpy.data.objects.get(frame.armature) if frame else None
    if obj is None or obj.type != 'ARMATURE' or set(frame.bones) != set(obj.pose.bones.keys()):
        return
    pose_frame(obj, frame)


def register():
    if pose_from_cache not in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.append(pose_from_cache)


def unregister():
    if pose_from_cache in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.remove(pose_from_cache)
