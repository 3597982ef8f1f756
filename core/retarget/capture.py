"""Another studio's capture written onto a given skeleton: what `train n3p` does to clips of other skeletons before
it measures their states against its own skeleton's rest."""
from __future__ import annotations

import numpy as np

from ..anim.motion import Motion
from ..rig.humanoid import find_mapping
from .retargeting import Retargeting, RetargetedMotion, on_bvh_skeleton
from .target import avatar_scale, bvh_target, standing_frames


def retarget_motion(motion: Motion, character: Motion) -> Motion:
    """A capture of a humanoid skeleton with hands and toes written onto `character`'s skeleton (a motion on it,
    standing in one of its frames at least), sized to the captured person as they stand in their most upright
    frames: its head joint meets the person's, its wrists the person's, its stance feet planted where the person's
    are. What another studio's capture is on the solver's skeleton."""
    target = bvh_target(character)
    mapping = find_mapping(motion.skeleton)
    missing = [j for j in ("head", "l_hand", "r_hand", "l_toes", "r_toes") if j not in mapping.joints]
    if missing:
        raise ValueError(f"{motion.name or 'the capture'}: its skeleton has no {', '.join(missing)} to retarget from")
    positions = motion.global_transforms()[1]
    heads, wrists = positions[:, mapping["head"]], positions[:, [mapping["l_hand"], mapping["r_hand"]]]
    floor = float(np.percentile(positions[:, [mapping["l_toes"], mapping["r_toes"]], 1], 1))
    standing_head = float(np.median(heads[standing_frames(positions, mapping), 1])) - floor
    scale = avatar_scale(target, standing_head, "fit")
    retargeting = Retargeting.between(motion.skeleton, mapping, target, motion, scale)
    rotations, placed = retargeting.apply(motion, wrists, False, heads, plant_feet=True)
    retargeted = RetargetedMotion(rotations, placed, wrists, heads, retargeting.wrists(rotations, placed), scale)
    return on_bvh_skeleton(retargeted, character.skeleton, motion.fps)
