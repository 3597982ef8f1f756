"""Stitch operator: the selected armatures' actions joined into one new action by core's stitcher (Kim et al.'s RMR)."""
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty

from .. import core
from ..armature import action_motion, motion_channels
from ..errors import polled
from ..keyframes import new_action
from ..scene_timing import fit_scene_timing, scene_fps

DEFAULTS = core.config.StitchConfig()
USER_ERRORS = (ValueError, OSError)


def stitch_sources(context):
    """The selected armatures that have an action, ordered by object name, and the active one among them."""
    armatures = sorted((obj for obj in context.selected_objects if obj.type == 'ARMATURE'
                        and obj.animation_data is not None and obj.animation_data.action is not None),
                       key=lambda obj: obj.name)
    active = context.active_object
    if len(armatures) < 2:
        raise ValueError("Select two or more armatures with actions: their actions are stitched in name order")
    if active not in armatures:
        raise ValueError("Make one of the selected armatures active: the stitched action goes on it")
    return armatures, active


class VR_AVATAR_OT_stitch_actions(bpy.types.Operator):
    """Join the selected armatures' actions, in name order, into one new action on the active armature (Recurrent Motion Refiner); no existing action is changed"""
    bl_idname = "vr_avatar.stitch_actions"
    bl_label = "Stitch Actions"
    bl_options = {'REGISTER', 'UNDO'}

    method: EnumProperty(
        name="Method", description="How the clips are joined",
        items=[('rmr', "Refiner", "The Recurrent Motion Refiner edits the poses around each seam"),
               ('inertialization', "Inertialization", "Each seam's pose jump is blended away over 30 frames"),
               ('concat', "Concatenate", "The clips aligned one after another, unblended")],
        default=DEFAULTS.method)
    window: IntProperty(name="Window", description="Frames (at 60 fps) the refiner edits at once",
                        default=DEFAULTS.window, min=10, max=1000)
    shift: IntProperty(name="Shift", description="Frames (at 60 fps) the window moves between runs",
                       default=DEFAULTS.shift, min=1, max=1000)
    foot_lock: BoolProperty(name="Foot Lock", description="Hold the feet where the refiner predicts contact",
                            default=DEFAULTS.foot_lock)
    feet_velocity_weight: FloatProperty(
        name="Feet From Velocity", description="The feet follow the path between the predicted foot positions and "
                                               "velocities, with this weight on the velocities (0: positions alone)",
        default=DEFAULTS.feet_velocity_weight, min=0.0, soft_max=256.0)

    @classmethod
    def poll(cls, context):
        return polled(cls, stitch_sources, context, (ValueError,))

    def execute(self, context):
        scene = context.scene
        fps = scene_fps(scene)
        try:
            armatures, active = stitch_sources(context)
            motions = [action_motion(scene, obj) for obj in armatures]
            config = core.config.StitchConfig(self.method, self.window, self.shift, foot_lock=self.foot_lock,
                                              feet_velocity_weight=self.feet_velocity_weight)
            model = core.stitch.model.StitchModel.load() if config.method == "rmr" else None
            result = core.stitch.stitching.stitch(motions, config, model)
            receiver = motions[armatures.index(active)].skeleton
            motion = core.stitch.stitching.on_skeleton(result.motion, receiver).resampled(fps)
        except USER_ERRORS as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        name = "Stitched " + " + ".join(obj.animation_data.action.name for obj in armatures)
        action, previous = new_action(name[:63], active, motion_channels(active, motion), scene.frame_start)
        fit_scene_timing(scene, fps, len(motion))
        kept = f"; '{previous.name}' is kept" if previous is not None else ""
        self.report({'INFO'}, f"Stitched {len(armatures)} actions into '{action.name}' ({len(motion)} frames, "
                              f"{config.method}){kept}")
        return {'FINISHED'}


classes = (VR_AVATAR_OT_stitch_actions,)
register, unregister = bpy.utils.register_classes_factory(classes)
