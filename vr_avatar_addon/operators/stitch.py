"""Stitch operator: its options gathered into a StitchConfig for stitching.stitch_actions."""
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty

from .. import core
from ..errors import polled
from ..stitching import stitch_actions, stitch_sources

DEFAULTS = core.config.StitchConfig()


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
                        default=DEFAULTS.window, min=20, max=1000)
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
        config = core.config.StitchConfig(self.method, self.window, self.shift, foot_lock=self.foot_lock,
                                          feet_velocity_weight=self.feet_velocity_weight)
        return stitch_actions(context, self.report, config)


classes = (VR_AVATAR_OT_stitch_actions,)
register, unregister = bpy.utils.register_classes_factory(classes)
