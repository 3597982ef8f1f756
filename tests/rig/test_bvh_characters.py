"""`solve --avatar` onto BVH characters written every way a BVH may be: one character, many files.

A real capture of another studio (100STYLE's Xsens walk, Perfume's dance; the procedural fixture walk where
../shared is absent) is the character. Each example writes it again as another exporter might: any rotation
order, metres, centimetres, millimetres or inches, position channels on every joint, its names prefixed, any rest
pose (each joint's axes turned at random, the motion compensated: a T-pose, an A-pose, bones along X), facing any
way, an armature root above the hips, a spine joint split in two, finger joints, its hierarchy listed in another
order. None of that changes the character: the solve written onto it (retarget_solution, on_bvh_skeleton and
write_bvh, as `solve --avatar` does) must place every original joint where it lands on the file as captured.
"""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from core.anim.motion import Motion
from core.anim.skeleton import Skeleton
from core.config import SimulationConfig
from core.devices.simulate import simulate_stream
from core.files.bvh import read_bvh, write_bvh
from core.math import quat
from core.retarget.retargeting import on_bvh_skeleton, retarget_solution
from core.retarget.target import bvh_target, uprightness
from core.rig.humanoid import find_mapping
from core.solve import load_solver, solve
from conftest import FIXTURE_WALK_1, SHARED, shared_exists

OTHER = SHARED / "data" / "other"
SECONDS = 5.0
PREFIXES = ("", "mixamorig:", "Bip01 ", "Character1_", "CC_Base_", "Armature|")
UNITS = (1.0, 100.0, 1000.0, 1.0 / 0.0254)
ORDERS = ("xyz", "xzy", "yxz", "yzx", "zxy", "zyx")
TOLERANCE_M = 2e-4
"""Six decimals in the file, in metres or in any unit, and the Euler angles of every joint along a chain."""
BENT_JOINT_TOLERANCE_M = 4e-3
"""Elbows and knees: where a limb is nearly straight, a micrometre's rounding of its bones moves the bend
(measured up to 1.6 mm)."""


def with_rest_turned(motion: Motion, turns: np.ndarray) -> Motion:
    """The same motion on a skeleton whose joint j's axes are turned by turns[j] (J, 4) at rest: each offset
    and end site is expressed in the turned parent's axes, each local rotation compensated."""
    skeleton, parents = motion.skeleton, motion.skeleton.parents
    parent_turns = np.where(parents[:, None] >= 0, turns[np.maximum(parents, 0)], quat.identity(len(parents)))
    ends = tuple((j, tuple(quat.inverse_rotate(turns[j], np.asarray(e, float)))) for j, e in skeleton.end_sites)
    return Motion(Skeleton(skeleton.names, parents, quat.inverse_rotate(parent_turns, skeleton.offsets), ends),
                  quat.multiply(quat.inverse_multiply(parent_turns[None], motion.rotations), turns[None]),
                  quat.inverse_rotate(parent_turns[None], motion.positions), motion.fps)


def turned_about_vertical(motion: Motion, degrees: float) -> Motion:
    """The whole character turned about +Y: it faces another way all along."""
    yaw = quat.from_yaw(np.radians(degrees))
    rotations, positions = motion.rotations.copy(), motion.positions.copy()
    rotations[:, 0], positions[:, 0] = quat.multiply(yaw, rotations[:, 0]), quat.rotate(yaw, positions[:, 0])
    return Motion(motion.skeleton, rotations, positions, motion.fps)


def with_joint(motion: Motion, parent: str, name: str, offset=None, children=()) -> Motion:
    """A joint `name` added under `parent`, never rotating, at `offset` (None: halfway to the named children); the
    children then hang from it; nothing else moves."""
    skeleton = motion.skeleton
    at = skeleton.names.index(parent)
    new = at + 1
    index = np.array([j if j <= at else j + 1 for j in range(len(skeleton))])
    moved = [skeleton.names.index(c) for c in children]
    offset = 0.5 * np.mean(skeleton.offsets[moved], axis=0) if offset is None else np.asarray(offset, float)
    parents = np.insert(np.where(skeleton.parents >= 0, index[np.maximum(skeleton.parents, 0)], -1), new, at)
    offsets = np.insert(skeleton.offsets, new, offset, axis=0)
    positions = np.insert(motion.positions, new, offset, axis=1)
    for c in moved:
        parents[index[c]] = new
        offsets[index[c]] -= offset
        positions[:, index[c]] -= offset
    ends = tuple((int(index[j]), e) for j, e in skeleton.end_sites)
    names = skeleton.names[:new] + (name,) + skeleton.names[new:]
    return Motion(Skeleton(names, parents, offsets, ends), np.insert(motion.rotations, new, quat.identity(1)[0], axis=1),
                  positions, motion.fps)


def under_armature_root(motion: Motion) -> Motion:
    """The character hung from a still root joint at the origin, as exporters add one above the hips."""
    skeleton = motion.skeleton
    still = np.zeros((len(motion), 1, 3))
    return Motion(Skeleton(("Armature",) + skeleton.names, np.concatenate([[-1], skeleton.parents + 1]),
                           np.vstack([np.zeros(3), skeleton.offsets]), tuple((j + 1, e) for j, e in skeleton.end_sites)),
                  np.concatenate([quat.identity(len(motion), 1), motion.rotations], axis=1),
                  np.concatenate([still, motion.positions], axis=1), motion.fps)


def children_reversed(motion: Motion) -> Motion:
    """The same hierarchy listed with every joint's children in the opposite order (legs before the spine)."""
    skeleton = motion.skeleton
    children = [[c for c in range(len(skeleton)) if skeleton.parents[c] == j] for j in range(len(skeleton))]
    order, stack = [], [0]
    while stack:
        j = stack.pop()
        order.append(j)
        stack.extend(children[j])
    index = np.argsort(order)
    parents = np.array([index[skeleton.parents[j]] if skeleton.parents[j] >= 0 else -1 for j in order])
    return Motion(Skeleton(tuple(skeleton.names[j] for j in order), parents, skeleton.offsets[order],
                           tuple((int(index[j]), e) for j, e in skeleton.end_sites)),
                  motion.rotations[:, order], motion.positions[:, order], motion.fps)


def prefixed(motion: Motion, prefix: str) -> Motion:
    return Motion(replace(motion.skeleton, names=tuple(prefix + n for n in motion.skeleton.names)), motion.rotations,
                  motion.positions, motion.fps)


def without_toes(motion: Motion) -> Motion:
    """The character with its toe joints taken out, each foot ending (its End Site) where its toe joint was."""
    skeleton = motion.skeleton
    mapping = find_mapping(skeleton)
    toes = [mapping[f"{s}_toes"] for s in "lr"]
    keep = [j for j in range(len(skeleton)) if j not in toes and skeleton.parents[j] not in toes]
    index = {j: i for i, j in enumerate(keep)}
    parents = np.array([index[skeleton.parents[j]] if skeleton.parents[j] >= 0 else -1 for j in keep])
    ends = tuple((index[j], e) for j, e in skeleton.end_sites if j in index) + tuple(
        (index[skeleton.parents[t]], tuple(skeleton.offsets[t])) for t in toes)
    return Motion(Skeleton(tuple(skeleton.names[j] for j in keep), parents, skeleton.offsets[keep], ends),
                  motion.rotations[:, keep], motion.positions[:, keep], motion.fps)


def written_on(character: Motion, solution, override: dict | None = None) -> Motion:
    """The solve on the character's skeleton, as `solve --avatar` writes it."""
    return on_bvh_skeleton(retarget_solution(solution, bvh_target(character, override), solution.motion.fps),
                           character.skeleton, solution.motion.fps)


CHARACTERS = {"fixture walk": FIXTURE_WALK_1, "100STYLE angry walk": OTHER / "100style" / "angry_reference.bvh",
              "Perfume dance": OTHER / "perfume" / "A_test.bvh"}
_solved: dict = {}


class Solved:
    """A character, the default method's solve of its stream, and `expected` (F, J, 3): that solve written onto
    the character as captured."""

    def __init__(self, name: str, character: Motion, solution, expected: np.ndarray):
        self.name, self.character, self.solution, self.expected = name, character, solution, expected

    def __repr__(self):
        return f"Solved({self.name!r})"


@pytest.fixture(scope="module", params=list(CHARACTERS))
def solved(request):
    """The character, the default method's solve of its stream and that solve written onto it as captured."""
    path = CHARACTERS[request.param]
    if not shared_exists(path) and path != FIXTURE_WALK_1:
        pytest.skip("../shared/data/other is not beside the repository")
    if request.param not in _solved:
        character = read_bvh(path)
        character = character[:int(SECONDS * character.fps)]
        solution = solve(simulate_stream(character, SimulationConfig(look_around_deg=30.0)).stream, load_solver(), None)
        _solved[request.param] = Solved(request.param, character, solution,
                                        written_on(character, solution).global_positions())
    return _solved[request.param]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.sampled_from(ORDERS), unit=st.sampled_from(UNITS), all_channels=st.booleans(),
       prefix=st.sampled_from(PREFIXES), seed=st.integers(0, 2 ** 16), turn_deg=st.floats(0.0, 180.0),
       facing_deg=st.floats(-180.0, 180.0), armature=st.booleans(), split_spine=st.booleans(),
       fingers=st.booleans(), reversed_children=st.booleans())
def test_a_character_written_any_way_gets_the_same_motion(tmp_path_factory, solved, order, unit, all_channels,
                                                          prefix, seed, turn_deg, facing_deg, armature, split_spine,
                                                          fingers, reversed_children):
    character, solution, expected = solved.character, solved.solution, solved.expected
    skeleton = character.skeleton
    variant = turned_about_vertical(character, facing_deg)
    axes = np.random.default_rng(seed).normal(size=(len(skeleton), 3))
    angles = np.random.default_rng(seed + 1).uniform(-1.0, 1.0, len(skeleton)) * np.radians(turn_deg)
    variant = with_rest_turned(variant, quat.from_rotation_vector(axes / np.linalg.norm(axes, axis=1, keepdims=True)
                                                                  * angles[:, None]))
    if split_spine:
        variant = with_joint(variant, skeleton.names[0], "SpineExtra", children=[skeleton.names[1]])
    if fingers:
        for side in ("Left", "Right"):
            hand = skeleton.names[find_mapping(skeleton)[f"{side[0].lower()}_hand"]]
            along = skeleton.offsets[skeleton.names.index(hand)]
            variant = with_joint(variant, hand, f"{side}HandIndex1", offset=0.4 * along)
            variant = with_joint(variant, f"{side}HandIndex1", f"{side}HandIndex2", offset=0.2 * along)
    if armature:
        variant = under_armature_root(variant)
    if reversed_children:
        variant = children_reversed(variant)
    variant = prefixed(variant, prefix)
    folder = tmp_path_factory.mktemp("characters")
    write_bvh(folder / "character.bvh", variant, order=order, scale=unit, translations="all" if all_channels else "auto")
    avatar = read_bvh(folder / "character.bvh")
    write_bvh(folder / "solved.bvh", written_on(avatar, solution))
    written = read_bvh(folder / "solved.bvh", scale=1.0)
    joints = [written.skeleton.names.index(prefix + name) for name in skeleton.names]
    miss = np.linalg.norm(written.global_positions()[:, joints] - expected[:len(written)], axis=-1).max(axis=0)
    mapping = find_mapping(skeleton)
    bent = np.isin(np.arange(len(skeleton)), [mapping[f"{s}_{j}"] for s in "lr" for j in ("forearm", "shin")])
    assert miss[~bent].max() < TOLERANCE_M
    assert miss[bent].max() < BENT_JOINT_TOLERANCE_M


@pytest.fixture(scope="module")
def walk_solved():
    """The fixture walk (5 s) and the default method's solve of its stream."""
    walk = read_bvh(FIXTURE_WALK_1)
    walk = walk[:int(SECONDS * walk.fps)]
    return walk, solve(simulate_stream(walk, SimulationConfig(look_around_deg=30.0)).stream, load_solver(), None)


def test_a_character_whose_most_upright_frame_lifts_a_foot_plants_both_feet(walk_solved):
    """The character's clip kept to its frames no more upright than one with a foot 10 cm up: that frame is its
    standing pose, and the lifted foot's heights came from it (the foot floated 10 cm all along)."""
    walk, solution = walk_solved
    mapping = find_mapping(walk.skeleton)
    positions = walk.global_positions()
    toes = positions[:, [mapping["l_toes"], mapping["r_toes"]], 1]
    upright = uprightness(positions, mapping)
    lifted = np.flatnonzero(np.abs(toes[:, 0] - toes[:, 1]) > 0.08)
    frames = np.flatnonzero(upright >= upright[lifted[np.argmin(upright[lifted])]])
    character = Motion(walk.skeleton, walk.rotations[frames], walk.positions[frames], walk.fps)
    assert np.ptp(character.global_positions()[np.argmin(upright[frames]), [mapping["l_toes"], mapping["r_toes"]], 1]) > 0.08
    written = written_on(character, solution).global_positions()
    assert np.abs(written[:, [mapping["l_toes"], mapping["r_toes"]], 1].min(axis=0)).max() < 1e-3


def test_a_character_without_toes_stands_on_the_ends_of_its_feet(walk_solved):
    """Each foot's End Site is its toe: it meets the floor and does not sink under it (the ankles stood on the
    floor, the feet's ends 9 cm under it)."""
    walk, solution = walk_solved
    character = without_toes(walk)
    mapping = find_mapping(character.skeleton)
    rotations, positions = written_on(character, solution).global_transforms()
    ends = dict(character.skeleton.end_sites)
    for side in "lr":
        foot = mapping[f"{side}_foot"]
        end = positions[:, foot] + quat.rotate(rotations[:, foot], np.asarray(ends[foot]))
        assert -2e-3 < end[:, 1].min() < 2e-3
        assert positions[:, foot, 1].min() > 0.04


def test_a_zero_length_bone_above_the_hips_leaves_the_legs_as_they_are(walk_solved):
    """A spine joint on the hips' head, mapped as the spine (CMU's LowerBack): the hips point along the spine to the
    next joint up (they pointed nowhere, and a knee moved 22 cm)."""
    walk, solution = walk_solved
    skeleton = walk.skeleton
    mapping = find_mapping(skeleton)
    character = with_joint(walk, skeleton.names[mapping["hips"]], "LowerBack", np.zeros(3),
                           [skeleton.names[mapping["spine"]]])
    written = written_on(character, solution, {"spine": "LowerBack"}).global_positions()
    joints = [character.skeleton.names.index(name) for name in skeleton.names]
    miss = np.linalg.norm(written[:, joints] - written_on(walk, solution).global_positions(), axis=-1)
    assert miss.max() < 0.02
