"""Live preview: core's solver stepped from a live three-point source, posing the avatar each timer tick.

Two sources: Blender's own VR session (the avatar is then seen in the headset) and an OpenXR
runtime through core's pyopenxr source. Without a headset neither can start (VRAvatarError, nothing
changed). Stopping puts the armature's pose back as it was before the preview.
"""
import time
from contextlib import suppress
from pathlib import Path

import bpy
import numpy as np

from . import bake, bone_space, core, keyframes, recording, solve_cache
from .errors import VRAvatarError
from .armature import target_armature
from .handlers import pose_frame
from .recording import NO_VR_SESSION, vr_session_running
from .scene_timing import scene_fps
from .scene_solver import avatar_target, require_physics, solver_for_scene
from .openxr_session import SharedOpenXR
from .stream_objects import stream_from_xr_poses, xr_poses

TICK_S = 1.0 / 90.0
"""Seconds between two ticks: a headset's refresh, roughly."""


class BlenderVRSource:
    """Device poses from Blender's VR session (VR Scene Inspection add-on)."""

    def __init__(self, context):
        if not vr_session_running(context):
            raise VRAvatarError(NO_VR_SESSION)
        self.state = context.window_manager.xr_session_state
        self.finished = False

    def read(self, context):
        """(positions (3, 3), rotations (3, 4), tracked (3,)) in core's frame, or None once the session ended."""
        if not bpy.types.XrSessionState.is_running(context):
            self.finished = True
            return None
        positions, rotations = xr_poses(context, self.state)
        stream = stream_from_xr_poses([time.perf_counter()], positions[None], rotations[None])
        return stream.positions[0], stream.rotations[0], stream.tracked[0]

    def status(self, _tracked):
        return None

    def close(self):
        pass


class OpenXRRuntimeSource:
    """Device poses from an OpenXR runtime through core's pyopenxr source (shared with Record OpenXR)."""

    def __init__(self, _context):
        self.source = SharedOpenXR()

    @property
    def finished(self) -> bool:
        return self.source.finished

    def read(self, _context):
        """The latest device poses the runtime located since the last tick, or None where it located none (not
        running yet, headset asleep)."""
        frames = self.source.frames()
        return (frames[-1].positions, frames[-1].rotations, frames[-1].tracked) if frames else None

    def status(self, tracked):
        """What the user should know (headset asleep, controllers off...), or None."""
        return core.devices.openxr_lifecycle.tracking_status(self.source.lifecycle, tracked)

    def close(self):
        self.source.close()


SOURCES = {'BLENDER_VR': BlenderVRSource, 'OPENXR': OpenXRRuntimeSource}


def avatar_settings(context) -> tuple:
    """What a live avatar is made from: the scene's Target Armature (VRAvatarError where it cannot be previewed:
    none, deleted, not in this scene), Method, Physics and Avatar Size."""
    solve = context.scene.vr_avatar.solve
    return target_armature(context).session_uid, solve.method, solve.physics, solve.avatar_size


class LiveAvatar:
    """One armature posed live by core's LiveRetargeting of the scene's solver (with Physics, its steps followed by
    the simulated body: core/physics/live.py), the devices seen through `calibration` (a LiveCalibration) where one
    is given; `restore` puts its pose back."""

    def __init__(self, context, calibration=None):
        self.settings = avatar_settings(context)
        self.obj, self.target = avatar_target(context)
        self.solver = solver_for_scene(context)
        require_physics(context.scene.vr_avatar)
        if context.scene.vr_avatar.solve.physics:
            self.solver = core.physics.live.PhysicalSolver(self.solver)
        self.live = core.retarget.live.LiveRetargeting(self.solver, self.target,
                                                       context.scene.vr_avatar.solve.avatar_size.lower(), calibration)
        self.order = [self.obj.data.bones.find(name) for name in self.target.names]
        self.pose = None  # the last step's (basis, locations, scales) of the target's bones
        bones = self.obj.pose.bones
        self.saved_pose = [(b.name, b.rotation_mode, tuple(b.rotation_quaternion), tuple(b.location), tuple(b.scale))
                           for b in bones]

    def current(self, context) -> bool:
        """Whether this avatar is still the one the scene describes: its armature there (not removed, nor read back by
        undo or another file) and its settings unchanged; VRAvatarError where the scene's target cannot be
        previewed."""
        try:
            self.obj.name
        except ReferenceError:
            return False
        return avatar_settings(context) == self.settings

    def restore(self) -> None:
        """The armature's pose as it was before the first step (nothing where it was freed)."""
        try:
            bones = self.obj.pose.bones
        except ReferenceError:
            return
        for name, mode, rotation, location, scale in self.saved_pose:
            bone = bones.get(name)
            if bone is not None:
                bone.rotation_quaternion, bone.location, bone.scale, bone.rotation_mode = rotation, location, scale, mode

    def step(self, positions, rotations, tracked, dt: float) -> None:
        global_rotations, global_positions = self.live.step(positions, rotations, tracked, dt)
        matrices = bone_space.armature_matrices(self.obj, global_rotations, global_positions,
                                                self.live.retargeting.scale)
        basis, locations, scales = bone_space.pose_basis(self.obj, matrices, self.order, self.target.parents)
        self.pose = (basis[0], locations[0], scales[0])
        pose_frame(self.obj, solve_cache.CachedFrame(self.obj.name, list(self.target.names), *self.pose))


def keyed_action(scene, avatar: LiveAvatar, keys: list, name: str):
    """The kept poses (seconds, (basis, locations, scales)) as a new action on the avatar's armature, one key a scene
    frame (the last pose of each frame, held over frames with none), keyed as a bake keys; the armature's active
    action is put back."""
    fps = scene_fps(scene)
    frames = np.array([int(round(seconds * fps)) for seconds, _ in keys])
    last_of_frame = {frame: k for k, frame in enumerate(frames)}
    held = [last_of_frame[max(f for f in last_of_frame if f <= frame)] for frame in range(frames.min(), frames.max() + 1)]
    basis, locations, scales = (np.array([keys[k][1][i] for k in held]) for i in range(3))
    cache = solve_cache.SolveCache(avatar.obj.name, list(avatar.target.names), scene.frame_start + int(frames.min()),
                                   basis, locations, scales, np.zeros(locations.shape), np.full((len(held), 2, 3), np.nan),
                                   np.full((len(held), 3), np.nan), {})
    before = keyframes.ActiveAction(avatar.obj)
    action, _ = keyframes.new_action(name, avatar.obj, bake.bake_channels(cache, avatar.obj), cache.frame_start)
    action.use_fake_user = True
    before.restore()
    return action


def calibration_line(calibration) -> str:
    """What the live calibration found, in one line for the status bar."""
    if not calibration.found:
        return ("Live Preview: no calibration gesture in the first minute; the controllers are taken as held by "
                "default")
    measured = [side for side, offset in zip(("left", "right"), calibration.grip_offsets_m) if offset is not None]
    return (f"Live Preview: calibration gesture found ({calibration.pose}-pose); "
            f"{' and '.join(measured)} grip{'s' if len(measured) > 1 else ''} measured")


class LivePreview:
    """A running preview: its source, the avatar it steps, and the scene's preview setting it turned off (`stop`
    puts everything back). VRAvatarError, with nothing changed, where the source or the avatar cannot start."""

    def __init__(self, context, source: str):
        self.source = SOURCES[source](context)
        solve = context.scene.vr_avatar.solve
        self.calibration = core.devices.live_calibration.LiveCalibration() if solve.calibrate_devices else None
        """How the controllers are held, read from the gesture at the preview's start (Calibrate Devices); it outlives
        the avatars the scene's changes make."""
        try:
            self.avatar = LiveAvatar(context, self.calibration)
        except VRAvatarError:
            self.source.close()
            raise
        self.preview = context.scene.vr_avatar.solve.preview
        context.scene.vr_avatar.solve.preview = False  # the live pose, not the cache, drives the armature
        self.last = time.perf_counter()
        self.status = None
        self.keys: list = []
        """(seconds into the take, pose) of each step while a take records."""
        self.keyed_take: Path | None = None
        """The file of the take the kept poses belong to."""

    def tick(self, context, report) -> bool:
        """Read the devices and step the avatar (untracked hands are held: only the headset must be usable); a
        change of the source's status is one warning. False once the source has ended; VRAvatarError where the scene's
        target can no longer be previewed (`follow_scene`)."""
        self.follow_scene(context, report)
        devices = self.source.read(context)
        if self.source.finished:
            return False
        tracked = None if devices is None else np.asarray(devices[2])
        status = self.source.status(tracked)
        if status != self.status and status is not None:
            report({'WARNING'}, status)
        self.status = status
        if devices is None:
            return True
        now = time.perf_counter()
        positions, rotations = (np.asarray(a) for a in devices[:2])
        if core.devices.plausibility.usable_samples(positions[0], rotations[0], tracked[0]):
            listening = self.calibration is not None and self.calibration.calibration is None
            self.avatar.step(positions, rotations, tracked, min(now - self.last, 0.1))
            if listening and self.calibration.calibration is not None:
                report({'INFO'}, calibration_line(self.calibration.calibration))
                if self.calibration.calibration.found:
                    recording.Recording.live_calibration = self.calibration.calibration
            self.key_while_recording(context, report, now)
        self.last = now
        return True

    def follow_scene(self, context, report) -> None:
        """A new avatar where the scene's changed since the last tick (another Target Armature, Method, Physics or
        Avatar Size, the armature read back by undo): the poses kept of a take so far keyed onto the old one, its pose
        put back. VRAvatarError, the old avatar let go, where the new one cannot be made."""
        if self.avatar.current(context):
            return
        with suppress(ReferenceError):
            self.write_keys(context, report)
        self.keys, self.keyed_take = [], None
        self.avatar.restore()
        self.avatar = LiveAvatar(context, self.calibration)
        context.scene.vr_avatar.solve.preview = False

    def key_while_recording(self, context, report, now: float) -> None:
        """Keep the pose while a take records; once it has ended, key what was kept (`keyed_action`)."""
        take = recording.Recording.current
        if take is not None and take.sampling and self.avatar.pose is not None:
            if take.path != self.keyed_take:
                self.write_keys(context, report)
                self.keyed_take = take.path
            self.keys.append((now - take.start, self.avatar.pose))
        elif self.keys:
            self.write_keys(context, report)

    def write_keys(self, context, report) -> None:
        """The poses kept over the last take as a new action named after it ("<take> Live"), kept with a fake
        user; the armature's active action stays as it was."""
        if self.keys and self.keyed_take is not None:
            action = keyed_action(context.scene, self.avatar, self.keys, f"{self.keyed_take.stem} Live")
            report({'INFO'}, f"Keyed the live preview of take '{self.keyed_take.stem}' into action "
                             f"'{action.name}'")
        self.keys, self.keyed_take = [], None

    def stop(self, context, report=None) -> None:
        """Close the source (keying a take still recording); the armature's pose and the scene's preview setting as
        they were (of an armature or file freed meanwhile, what is left)."""
        self.source.close()
        recording.Recording.live_calibration = None
        with suppress(ReferenceError):
            if report is not None:
                self.write_keys(context, report)
            self.avatar.restore()
            context.scene.vr_avatar.solve.preview = self.preview
