"""VR Avatar core: full-body animation from three tracked points, independent of Blender.

Data flows one way: mocap (bvh, mocap) -> skeleton and motion -> streams (stream, simulate) ->
metrics. numpy at run time; torch only inside training code.
"""
__version__ = "0.1.0"
