"""Stitching in Blender: the selected armatures' actions joined into one new action on the active armature by
core's stitcher (Kim et al.'s Recurrent Motion Refiner); no existing action is changed."""
from . import core
from .armature import motion_channels
from .keyframes import new_action
from .errors import USER_ERRORS
from .motion_library import animated_armatures, metre_motion
from .scene_timing import fit_scene_timing, scene_fps



def stitch_sources(context):
    """The selected armatures that have an action, ordered by object name, and the active one among them."""
    armatures = sorted(animated_armatures(context), key=lambda obj: obj.name)
    active = context.active_object
    if len(armatures) < 2:
        raise ValueError("Select two or more armatures with actions: their actions are stitched in name order")
    if active not in armatures:
        raise ValueError("Make one of the selected armatures active: the stitched action goes on it")
    return armatures, active


def stitch_actions(context, report, config) -> set:
    """The selected armatures' actions stitched by `config` (core.config.StitchConfig) into a new action on the
    active armature, at the scene's rate; one error line and nothing made if they cannot be."""
    scene = context.scene
    fps = scene_fps(scene)
    try:
        armatures, active = stitch_sources(context)
        motions = [metre_motion(scene, obj) for obj in armatures]
        model = core.stitch.model.StitchModel.load() if config.method == "rmr" else None
        result = core.stitch.stitching.stitch(motions, config, model)
        receiver = motions[armatures.index(active)].skeleton
        motion = core.stitch.stitching.on_skeleton(result.motion, receiver).resampled(fps)
    except USER_ERRORS as error:
        report({'ERROR'}, str(error))
        return {'CANCELLED'}
    name = "Stitched " + " + ".join(obj.animation_data.action.name for obj in armatures)
    action, previous = new_action(name[:63], active, motion_channels(active, motion), scene.frame_start)
    fit_scene_timing(scene, fps, len(motion))
    kept = f"; '{previous.name}' is kept" if previous is not None else ""
    report({'INFO'}, f"Stitched {len(armatures)} actions into '{action.name}' ({len(motion)} frames, "
                     f"{config.method}){kept}")
    return {'FINISHED'}
