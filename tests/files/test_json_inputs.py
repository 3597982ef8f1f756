"""JSON the user gives (joint mappings, IK constants, glTF/VRM files): bad content is one line naming the file."""
from __future__ import annotations

import json

import pytest

from core.config import UpperBodyIKConfig
from core.rig.humanoid import HumanoidMappingError, load_override
from core.rig.mapping_preset import read_vrm_humanoid

DEEP = "[" * 100_000 + "]" * 100_000


def test_json_nested_past_the_parser_is_one_line_for_every_reader(tmp_path):
    for name, read, error in (("mapping.json", load_override, HumanoidMappingError),
                              ("constants.json", UpperBodyIKConfig.load, ValueError),
                              ("avatar.vrm", read_vrm_humanoid, HumanoidMappingError)):
        path = tmp_path / name
        path.write_text(DEEP)
        with pytest.raises(error, match=rf"^{path}: .*nested too deeply"):
            read(path)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e300, [1.0, float("nan"), 2.0]])
def test_ik_constants_that_are_not_finite_or_absurd_are_refused(tmp_path, value):
    name = "elbow_weights_deg_per_m" if isinstance(value, list) else "shoulder_gain_deg"
    path = tmp_path / "constants.json"
    path.write_text(json.dumps({"constants": {name: value}}))
    with pytest.raises(ValueError, match=rf"^{path}: IK constant '{name}' .* must be finite and at most 1000"):
        UpperBodyIKConfig.load(path)


@pytest.mark.parametrize("extensions", [
    {"VRMC_vrm": {"humanoid": {"humanBones": [["hips", 0]]}}},
    {"VRM": {"humanoid": {"humanBones": {"hips": 0}}}},
    {"VRM": {"humanoid": ["hips"]}},
    {"VRMC_vrm": []},
])
def test_a_vrm_map_of_another_shape_is_one_line(tmp_path, extensions):
    path = tmp_path / "odd.vrm"
    path.write_text(json.dumps({"nodes": [{"name": "Hips"}], "extensions": extensions}))
    with pytest.raises(HumanoidMappingError, match=rf"^{path}: "):
        read_vrm_humanoid(path)
