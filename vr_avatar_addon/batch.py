"""Batch bakes: several streams onto one avatar, or one stream onto several, in one operation with one progress
bar. Each pair is loaded, mapped (where the armature has no mapping yet), solved and baked as the panel would,
its action named "<stream> - <armature>"; a pair that fails is one error line and the others go on. The scene's
stream (its empties as they are, hand edits included), target armature and bone mapping (hand edits included, used
for its armature's pairs), its cached solve (what scrubbing shows and Bake Action bakes), frame range and current
frame are put back at the end."""
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import bpy

from . import bake, solve_cache
from .bone_map import fill_bone_map, is_mapped, report_mapping, restore_bone_map, saved_bone_map
from .errors import USER_ERRORS, VRAvatarError
from .scene_solve import solve_scene
from .stream_files import load_stream
from .stream_objects import TAG, remove_stream_empties


def action_name(stream: Path, armature) -> str:
    """The baked action's name for one pair: the stream file's stem and the armature's name (Blender keeps 63
    characters)."""
    return f"{stream.stem} - {armature.name}"[:63]


def bake_pair(context, report, stream: Path, armature, name: str, push_to_nla: bool | None = None,
              mapping: tuple | None = None) -> str:
    """Load `stream`, solve it onto `armature` and bake as action `name` (`push_to_nla` as Bake takes it), with the
    bone mapping `mapping` (`saved_bone_map`) where it is for this armature; the new action's name. RuntimeError or
    VRAvatarError with the operator's message where a step fails; a bake stopped by any error is taken back, and
    Ctrl+C (KeyboardInterrupt) in the solve or the bake is raised as it is."""
    settings = context.scene.vr_avatar
    load_or_raise(context, report, stream)  # the steps' own functions: bpy.ops would turn Ctrl+C into an error line
    settings.target_armature = armature
    if mapping is not None and mapping[0] == armature.name and mapping[3]:
        restore_bone_map(settings, mapping)
    elif not is_mapped(settings, armature):
        report_mapping(SimpleNamespace(report=report), settings, armature, fill_bone_map(settings, armature))
    solve_scene(context, report)
    baked = bake.Bake(context, name, push_to_nla)
    try:
        baked.finish(report)
    except BaseException:  # Ctrl+C (KeyboardInterrupt) too: no half-made action
        baked.cancel()
        raise
    return baked.action.name


def load_or_raise(context, report, stream: Path) -> None:
    """Load Stream's work on `stream`, its warnings reported; VRAvatarError with its error line where it fails."""
    errors = []

    def errors_kept(kind, message):
        if 'ERROR' in kind:
            errors.append(message)
        else:
            report(kind, message)

    if load_stream(context, errors_kept, str(stream)) != {'FINISHED'}:
        raise VRAvatarError("; ".join(errors) or f"{stream} could not be loaded")


@contextmanager
def scene_stream_kept(scene):
    """The scene's stream kept out of the batch's way: its empties as they are (hand edits included), not taken
    out by the batch's Load Stream, and put back with its file when the batch's own empties are removed."""
    settings = scene.vr_avatar.stream
    kept = settings.stream_path, settings.head, settings.left, settings.right
    empties = [obj for obj in scene.objects if obj.get(TAG)]
    for obj in empties:
        del obj[TAG]
    try:
        yield
    finally:
        remove_stream_empties(scene)
        for obj in empties:
            obj[TAG] = 1
        settings.stream_path, settings.head, settings.left, settings.right = kept


@contextmanager
def scene_target_kept(settings):
    """The scene's target armature and bone mapping (hand edits included: `saved_bone_map`, yielded for the batch's
    pairs on that armature) put back after the batch's."""
    target, mapping = settings.target_armature, saved_bone_map(settings)
    try:
        yield mapping
    finally:
        settings.target_armature = target
        restore_bone_map(settings, mapping)


def property_values(group) -> dict:
    """A property group's values (arrays as tuples), as `setattr` puts them back."""
    values = {}
    for prop in group.bl_rna.properties:
        if prop.identifier != "rna_type":
            value = getattr(group, prop.identifier)
            values[prop.identifier] = tuple(value) if getattr(prop, "is_array", False) else value
    return values


@contextmanager
def scene_solve_kept(scene):
    """The scene's cached solve (smoothed or not; none where there was none), the calibration its solve found and
    whether it is stale and previewed, put back after the batch's solves (and the settings they changed)."""
    solve = scene.vr_avatar.solve
    cache, state = solve_cache.kept(scene), (solve.has_cache, solve.cache_stale, solve.preview)
    calibration = property_values(solve.found_calibration)
    try:
        yield
    finally:
        solve_cache.put_back(scene, cache)
        solve.has_cache, solve.cache_stale, solve.preview = state
        for name, value in calibration.items():
            setattr(solve.found_calibration, name, value)


def bake_batch(context, report, streams: list[Path], armatures: list, name=action_name,
               push_to_nla: bool | None = None) -> set:
    """Every stream onto every armature (module docstring), each action named `name(stream, armature)` and pushed
    to the NLA as `push_to_nla` says (None: as the bake settings say)."""
    if not streams or not armatures:
        report({'ERROR'}, "Choose one or more stream files and select one or more armatures (or set the Target "
                          "Armature)")
        return {'CANCELLED'}
    scene = context.scene
    frames = scene.frame_start, scene.frame_end, scene.frame_current
    window_manager = context.window_manager
    pairs = [(stream, armature) for stream in streams for armature in armatures]
    made, failed = [], []
    window_manager.progress_begin(0, len(pairs))
    try:
        with scene_solve_kept(scene), scene_stream_kept(scene), scene_target_kept(scene.vr_avatar) as mapping:
            for done, (stream, armature) in enumerate(pairs, 1):
                try:
                    made.append(bake_pair(context, report, stream, armature, name(stream, armature), push_to_nla,
                                          mapping))
                except (RuntimeError, *USER_ERRORS) as error:
                    message = str(error).removeprefix("Error: ").strip()
                    report({'ERROR'}, f"{stream.name} onto '{armature.name}': {message}")
                    failed.append(f"{stream.name} onto '{armature.name}'")
                window_manager.progress_update(done)
    finally:
        window_manager.progress_end()
        scene.frame_start, scene.frame_end = frames[:2]
        scene.frame_set(frames[2])
    report({'INFO'} if not failed else {'WARNING'},
           f"Batch: baked {len(made)} of {len(pairs)} ({', '.join(made) or 'none'})"
           + (f"; failed: {', '.join(failed)}" if failed else ""))
    return {'FINISHED'} if made else {'CANCELLED'}


def bake_takes(context, report) -> set:
    """Every take of the scene's list onto the Target Armature, each pushed to an NLA track of its own named after
    the take (the armature's active action kept)."""
    settings = context.scene.vr_avatar
    if settings.target_armature is None:
        report({'ERROR'}, "Pick the Target Armature the takes are baked onto")
        return {'CANCELLED'}
    streams = [Path(bpy.path.abspath(take.path)) for take in settings.stream.takes]
    return bake_batch(context, report, streams, [settings.target_armature], lambda stream, _: stream.stem[:63],
                      push_to_nla=True)
