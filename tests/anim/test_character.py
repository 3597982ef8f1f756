"""Character space (the virtual root) on real walking: on the floor under the hips, facing the way it walks."""
import numpy as np

from core.math import quat
from core.anim.character import body_yaw, character_frames, to_character_space
from core.math.angle import wrap_angle
from core.rig.humanoid import find_mapping


def test_virtual_root_follows_the_walk(walk2):
    positions = walk2.global_positions()
    mapping = find_mapping(walk2.skeleton)
    root_position, root_rotation = character_frames(positions, mapping)
    hips = positions[:, mapping["hips"]]
    assert np.allclose(root_position[:, [0, 2]], hips[:, [0, 2]]) and np.all(root_position[:, 1] == 0.0)
    # Walking forward: the facing agrees with the direction of travel over each second.
    travel = hips[30:] - hips[:-30]
    travel_yaw = np.arctan2(travel[:, 0], travel[:, 2])
    gap = np.degrees(np.abs(wrap_angle(body_yaw(positions, mapping)[15:-15] - travel_yaw)))
    assert np.median(gap) < 15.0
    # In character space the hips sit above the origin and the head is above the hips.
    local = to_character_space(positions, root_position, root_rotation)
    assert np.allclose(local[:, mapping["hips"], [0, 2]], 0.0, atol=1e-9)
    assert np.all(local[:, mapping["head"], 1] > local[:, mapping["hips"], 1])
    # Left is +X when facing +Z.
    assert np.mean(local[:, mapping["l_thigh"], 0] > local[:, mapping["r_thigh"], 0]) == 1.0
    # Rotations are yaw only.
    up = quat.rotate(root_rotation, np.array([0.0, 1.0, 0.0]))
    assert np.allclose(up, [0.0, 1.0, 0.0])
