"""One solve of the scene's stream onto the target armature into the solve cache: what is read from Blender, the core
work (which may run on another thread: the panel's Solve runs it beside Blender) and the cache stored from it."""
from dataclasses import dataclass

import bpy
import numpy as np
from mathutils import Quaternion

from . import bone_space, core, root_motion, solve_cache, stream_files
from .armature import object_by_uid, target_armature
from .errors import VRAvatarError
from .handlers import pose_frame
from .scene_solver import avatar_target, device_calibration, keep_calibration, read_stream, require_physics, \
    solver_for_scene
from .scene_timing import scene_fps


@dataclass
class SceneSolve:
    """One solve of the scene's stream: what is read from Blender first (`prepare`), the core work, which touches
    no Blender data and may run on another thread (`compute`), and the cache made from it (`finish`)."""

    armature: str
    """The armature's name when the solve began, for messages."""
    armature_uid: int
    """The armature's `session_uid`, which a rename keeps: `finish` caches onto it whatever it is called by then."""
    target: object
    solver: object
    stream: object
    calibration: object
    fps: float
    stride_scaled: bool
    avatar_size: str
    physics: bool
    stream_path: str = ""
    stream_note: str = ""
    """Where the stream comes from when it is not the file as it is (`scene_solver.read_stream`)."""
    frame_start: int = 1
    """The scene frame of the stream's first sample: where its empties were keyed, whatever the scene's start now."""
    rest: tuple = ()
    """The armature's bones as the solve read them (`rest_bones`): `finish` refuses bones edited meanwhile."""
    phase: str = "solving"
    done: float = 0.0
    """The share of the work done (0-1): the progress bar's."""
    solution: object = None
    retargeted: object = None
    error: str | None = None

    @classmethod
    def prepare(cls, context) -> "SceneSolve":
        """Everything the solve reads from the scene; VRAvatarError for what stops it."""
        scene, settings = context.scene, context.scene.vr_avatar
        armature = target_armature(context)
        edits_taken_in(armature)
        root_motion.restore_placement(armature)  # not moved on by an Object bake's travel
        obj, target = avatar_target(context)
        require_physics(settings)  # said before the solve runs, not after it
        stream, note = read_stream(scene)
        return cls(obj.name, obj.session_uid, target, solver_for_scene(context), stream, device_calibration(settings),
                   scene_fps(scene), settings.solve.stride_scaled, settings.solve.avatar_size.lower(),
                   settings.solve.physics, bpy.path.abspath(settings.stream.stream_path), note,
                   stream_files.stream_start_frame(scene), rest_bones(obj))

    def tell(self, share: float) -> None:
        """Keep the share of the work done (core's progress, called from the solve's thread)."""
        self.done = share

    def compute(self) -> None:
        """The solve and its retargeting onto the target (core alone), telling `done` as it goes; an error is kept
        in `error`."""
        solved = SOLVED_SHARE_WITH_PHYSICS if self.physics else SOLVED_SHARE
        try:
            self.solution = core.solve.solve(self.stream, self.solver, self.calibration,
                                             core.solution.progress_between(self.tell, 0.0, solved))
            if self.physics:
                self.phase = "simulating"
                self.solution = core.solve.with_physics(
                    self.solution, progress=core.solution.progress_between(self.tell, solved, SIMULATED_SHARE))
            self.phase = "retargeting"
            self.retargeted = core.retarget.retargeting.retarget_solution(self.solution, self.target, self.fps,
                                                                  self.stride_scaled, self.avatar_size)
            self.phase = "done"
            self.tell(1.0)
        except ValueError as error:
            where = f"stream {self.stream_path}" if self.solution is None else f"armature '{self.armature}'"
            self.error = f"{where}: {error}"
            self.phase = "failed"

    def finish(self, context) -> solve_cache.SolveCache:
        """The computed solve as the scene's cache (stored, the armature posed); VRAvatarError if it failed."""
        if self.error is not None:
            raise VRAvatarError(self.error)
        scene = context.scene
        obj = object_by_uid(self.armature_uid)
        if obj is None or scene not in obj.users_scene:
            name = self.armature if obj is None else obj.name
            raise VRAvatarError(f"Armature '{name}' was removed during the solve: nothing was cached")
        edits_taken_in(obj)
        if not same_rest_bones(rest_bones(obj), self.rest):
            raise VRAvatarError(f"Armature '{obj.name}''s bones were edited during the solve: nothing was cached; "
                                "solve again")
        solution, retargeted = self.solution, self.retargeted
        root_motion.restore_placement(obj)  # where `prepare` read it, whatever frame the scene is on now
        basis, locations, scales = pose_values(obj, self.target, retargeted)
        cache = solve_cache.SolveCache(obj.name, list(self.target.names), self.frame_start, basis, locations, scales,
                                       retargeted.positions, retargeted.wrist_targets, retargeted.head_targets,
                                       solution_figures(solution, retargeted), self.fps, own_transform(obj),
                                       self.rest)
        if not all(np.isfinite(a).all() for a in (cache.basis, cache.locations, cache.scales, cache.positions)):
            raise VRAvatarError(f"The solve onto '{obj.name}' went non-finite: nothing was cached")
        keep_calibration(scene.vr_avatar.solve.found_calibration, solution.calibration)
        solve_cache.store(scene, cache, obj)
        settings = scene.vr_avatar.solve
        settings.has_cache, settings.cache_stale, settings.preview = True, False, True
        scene.frame_end = max(scene.frame_end, cache.frame_start + cache.frames - 1)
        pose_frame(obj, solve_cache.cached_frame(scene, scene.frame_current))
        return cache


SOLVED_SHARE, SOLVED_SHARE_WITH_PHYSICS, SIMULATED_SHARE = 0.95, 0.6, 0.95
"""The share of a scene's solve done after core's solve (without and with the physics pass) and after the pass:
retargeting takes the rest (a 72 Hz walk's profile)."""


def edits_taken_in(obj) -> None:
    """An armature in Edit Mode with its edits written into its bones (Blender writes them on leaving Edit Mode
    only), so that they are read as the user sees them."""
    if obj.mode == 'EDIT':
        obj.update_from_editmode()


def rest_bones(obj) -> tuple:
    """The armature's bones as a solve reads them: names, parents' names, rest matrices and tails."""
    bones = obj.data.bones
    return (tuple(b.name for b in bones), tuple(b.parent.name if b.parent else "" for b in bones),
            np.array([b.matrix_local for b in bones]).reshape(len(bones), 4, 4),
            np.array([b.tail_local for b in bones]).reshape(len(bones), 3))


def changed_rest_bone(now: tuple, then: tuple) -> str | None:
    """The first bone added, removed, parented otherwise or moved at rest (head, axes or tail: by more than 0.01 mm)
    between two `rest_bones`, or None where they are the same."""
    before = {name: j for j, name in enumerate(then[0])}
    for j, name in enumerate(now[0]):
        k = before.pop(name, None)
        if k is None or now[1][j] != then[1][k] or not np.allclose(now[2][j], then[2][k], rtol=0.0, atol=1e-5) \
                or not np.allclose(now[3][j], then[3][k], rtol=0.0, atol=1e-5):
            return name
    return next(iter(before), None)


def same_rest_bones(now: tuple, then: tuple) -> bool:
    """Whether two `rest_bones` are the same bones in the same rest pose."""
    return changed_rest_bone(now, then) is None


def own_transform(obj) -> np.ndarray:
    """(10,) the object's own location, rotation (as a quaternion, whatever its rotation mode) and scale."""
    if obj.rotation_mode == 'QUATERNION':
        rotation = obj.rotation_quaternion.normalized()
    elif obj.rotation_mode == 'AXIS_ANGLE':
        angle, *axis = obj.rotation_axis_angle
        rotation = Quaternion(axis, angle)
    else:
        rotation = obj.rotation_euler.to_quaternion()
    return np.array([*obj.location, *rotation, *obj.scale], dtype=float)


def solve_scene(context, report=None) -> solve_cache.SolveCache:
    """Solve the scene's stream with its settings onto the target armature, in one go: the cache, stored (`report`
    told where the stream is the edited empties')."""
    solve = SceneSolve.prepare(context)
    if solve.stream_note and report is not None:
        report({'INFO'}, solve.stream_note)
    solve.compute()
    return solve.finish(context)


def pose_values(obj, target, retargeted):
    """(rotation_quaternion, location, scale) per frame and bone (core's bone order) that pose `obj` as retargeted."""
    matrices = bone_space.armature_matrices(obj, retargeted.rotations, retargeted.positions, retargeted.scale)
    order = [obj.data.bones.find(name) for name in target.names]
    return bone_space.pose_basis(obj, matrices, order, target.parents)


def solution_figures(solution, retargeted) -> dict:
    """The quality report's figures and per-frame series, with the avatar's own wrist error added."""
    series, figures = core.quality.report.solution_quality(solution)
    gap = np.linalg.norm(retargeted.wrists - retargeted.wrist_targets, axis=-1)
    figures["avatar_hand_cm"] = round(float(np.nanmean(gap)) * 100.0, 3) if np.isfinite(gap).any() else None
    return {"figures": figures, "summary": core.quality.report.summarise(series),
            "series": {k: core.quality.report.json_values(v) for k, v in series.items()}}
