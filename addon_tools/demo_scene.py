"""Demo scene: the add-on's workflow on the core demo's output, saved as a .blend with a rendered image.

    python -m addon_tools.demo_scene --out out --stream out/CLIP.stream.csv --db out/default.db.npz --avatar BVH

`python build.py demo` runs it after `python -m core demo`, with bpy as a Python module and the
add-on registered from this checkout. It drives the add-on's own operators as a user would: add
the database, load the stream as empties, import an avatar, map its bones, give it a skinned mannequin, solve,
bake (the avatar's imported action is kept) and render the avatar mid-stride with Workbench on the CPU.
Left out of the extension zip.
"""
import argparse
import json
import sys
from pathlib import Path

import bpy
import numpy as np

from core.matching.pose_database import PoseDatabase
from core.physics.body import RADIUS_M

LIMB_RADIUS_SHARE, LIMB_RADIUS_MIN, LIMB_RADIUS_MAX = 0.13, 0.02, 0.06
"""An unmapped bone's tube radius: this share of its length, within these bounds (a mapped bone's is the physics
body's capsule radius for its joint, RADIUS_M)."""
TUBE_SIDES = 12


def add_body(armature, bone_map: dict[str, str]):
    """A mannequin skinned to the armature, so the avatar renders (armatures do not): one mesh, a closed tube per
    bone from its head to its tail at rest, as wide as its joint (`bone_map`: joint -> bone), every vertex weighted
    to its own bone, deformed by an Armature modifier. Built in the armature's rest space, whatever pose or action
    it has now."""
    joints = {bone: joint.split("_", 1)[1] if joint[:2] in ("l_", "r_") else joint for joint, bone in bone_map.items()}
    material = bpy.data.materials.new("Avatar")
    material.diffuse_color = (0.85, 0.55, 0.3, 1.0)
    angles = np.linspace(0.0, 2.0 * np.pi, TUBE_SIDES, endpoint=False)
    ring = np.stack([np.cos(angles), np.zeros(TUBE_SIDES), np.sin(angles)], axis=1)
    vertices, faces, groups = [], [], []
    for bone in armature.data.bones:
        if bone.length < 0.02 or bone.parent is None:
            continue
        radius = RADIUS_M.get(joints.get(bone.name)) or float(np.clip(LIMB_RADIUS_SHARE * bone.length,
                                                                       LIMB_RADIUS_MIN, LIMB_RADIUS_MAX))
        rest = np.array(bone.matrix_local)  # the bone's axes (Y along it) and head in armature space, at rest
        first = len(vertices)
        length = bone.length if bone.children else max(bone.length, 2.4 * radius)  # a leaf (head, toes) is round
        for along, scale in ((0.0, 1.0), (length, 0.8)):  # tapered toward the tail
            local = ring * radius * scale + [0.0, along, 0.0]
            vertices += (local @ rest[:3, :3].T + rest[:3, 3]).tolist()
        for k in range(TUBE_SIDES):
            a, b = first + k, first + (k + 1) % TUBE_SIDES
            faces.append((a, b, b + TUBE_SIDES, a + TUBE_SIDES))
        faces.append(tuple(range(first + TUBE_SIDES - 1, first - 1, -1)))
        faces.append(tuple(range(first + TUBE_SIDES, first + 2 * TUBE_SIDES)))
        groups.append((bone.name, list(range(first, first + 2 * TUBE_SIDES))))
    mesh = bpy.data.meshes.new("Mannequin")
    mesh.from_pydata(vertices, [], faces)
    mesh.materials.append(material)
    for polygon in mesh.polygons:
        polygon.use_smooth = True
    body = bpy.data.objects.new("Mannequin", mesh)
    bpy.context.scene.collection.objects.link(body)
    body.parent = armature
    body.matrix_parent_inverse.identity()
    for name, indices in groups:
        body.vertex_groups.new(name=name).add(indices, 1.0, 'REPLACE')
    body.modifiers.new("Armature", 'ARMATURE').object = armature
    return body


def frame_mid_stride(scene, bone_map: dict[str, str]) -> int:
    """The cached frame whose feet are furthest apart (core's positions; any frame if uncached)."""
    cache = scene.get("vr_avatar_solve")
    if cache is None:
        return scene.frame_current
    bones = list(cache["bones"])
    frames, joints = int(cache["frames"]), int(cache["joints"])
    positions = np.asarray(cache["positions"]).reshape(frames, joints, 3)
    feet = positions[:, [bones.index(bone_map["l_foot"]), bones.index(bone_map["r_foot"])]]
    spread = np.linalg.norm(feet[:, 0] - feet[:, 1], axis=-1)
    return int(cache["frame_start"]) + int(np.argmax(spread[frames // 4:]) + frames // 4)


def add_camera_and_light(scene, armature, hips_bone: str) -> None:
    """A camera beside the avatar that keeps its hips in view, a sun, and a floor."""
    bpy.context.view_layer.update()
    hips = armature.matrix_world @ armature.pose.bones[hips_bone].head
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(camera)
    camera.location = (hips.x + 3.2, hips.y - 3.2, 1.3)
    aim = camera.constraints.new('TRACK_TO')
    aim.target, aim.subtarget = armature, hips_bone
    scene.camera = camera
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", 'SUN'))
    sun.rotation_euler = (0.7, 0.2, 0.6)
    scene.collection.objects.link(sun)
    floor = bpy.data.meshes.new("Floor")
    size = 30.0
    floor.from_pydata([(-size, -size, 0), (size, -size, 0), (size, size, 0), (-size, size, 0)], [], [(0, 1, 2, 3)])
    scene.collection.objects.link(bpy.data.objects.new("Floor", floor))


def render(scene, path: Path) -> None:
    scene.render.engine = 'BLENDER_WORKBENCH'
    scene.display.shading.light = 'STUDIO'
    scene.display.shading.color_type = 'MATERIAL'
    scene.display.shading.show_shadows = True
    scene.render.resolution_x, scene.render.resolution_y = 800, 450
    scene.render.image_settings.compression = 90
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)


def run(out: Path, stream: Path, database: Path, avatar_bvh: Path) -> dict:
    import vr_avatar_addon

    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.context.preferences.filepaths.save_version = 0  # no demo.blend1 backups
    vr_avatar_addon.register()
    scene = bpy.context.scene
    scene.render.fps = 30
    blend = (out / "demo.blend").resolve()
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    settings = bpy.context.scene.vr_avatar
    entry = settings.library.databases.add()
    entry.path = bpy.path.relpath(str(database.resolve()))
    entry.poses = len(PoseDatabase.load(database))
    bpy.ops.vr_avatar.load_stream(filepath=str(stream.resolve()))
    before = set(bpy.data.objects)
    bpy.ops.vr_avatar.import_bvh(filepath=str(avatar_bvh))
    (armature,) = [o for o in set(bpy.data.objects) - before if o.type == 'ARMATURE']
    armature.name = "Avatar"
    imported_action = armature.animation_data.action.name if armature.animation_data else None
    settings.target_armature = armature
    bpy.ops.vr_avatar.map_bones()
    add_body(armature, {item.joint: item.bone for item in settings.bone_map if item.bone})
    bpy.ops.vr_avatar.solve_stream()
    bpy.ops.vr_avatar.bake_action()
    bone_map = {item.joint: item.bone for item in settings.bone_map}
    scene.frame_set(frame_mid_stride(scene, bone_map))
    add_camera_and_light(scene, armature, bone_map["hips"])
    image = out / "demo.png"
    render(scene, image.resolve())
    bpy.ops.wm.save_mainfile()
    report = json.loads(scene["vr_avatar_solve"]["report"])
    return {"blend": str(blend), "image": str(image), "frame": scene.frame_current,
            "baked_action": armature.animation_data.action.name, "kept_action": imported_action,
            "report": settings.solve.report_path, "figures": report["figures"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out")
    parser.add_argument("--stream", required=True, help="three-point stream CSV")
    parser.add_argument("--db", required=True, help="motion database (.npz)")
    parser.add_argument("--avatar", required=True, help="BVH whose skeleton becomes the avatar")
    args = parser.parse_args(argv)
    summary = run(Path(args.out), Path(args.stream), Path(args.db), Path(args.avatar))
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
