"""What the add-on must leave as the user has it, in the real bpy: the open file's paths after Save Copy."""
from pathlib import Path


def test_save_copy_into_another_folder_leaves_the_open_files_paths(bpy, installed, empty_scene, tmp_path):
    """Save Copy writes the copy's paths from its own folder; the open file keeps its own, and they still read."""
    project, elsewhere = tmp_path / "project", tmp_path / "backup" / "deep"
    project.mkdir()
    elsewhere.mkdir(parents=True)
    (project / "take.csv").write_text("t\n")
    bpy.ops.wm.save_as_mainfile(filepath=str(project / "scene.blend"))
    settings = bpy.context.scene.vr_avatar
    settings.stream["stream_path"] = "//take.csv"  # past the update callback, which would load the file
    settings.library.databases.add()["path"] = "//scene.vr_avatar_db.npz"
    bpy.ops.wm.save_as_mainfile(filepath=str(elsewhere / "copy.blend"), copy=True)
    assert bpy.data.filepath == str(project / "scene.blend")
    assert settings.stream.stream_path == "//take.csv"
    assert settings.library.databases[0].path == "//scene.vr_avatar_db.npz"
    bpy.ops.wm.open_mainfile(filepath=str(elsewhere / "copy.blend"))
    copied = bpy.context.scene.vr_avatar
    assert Path(bpy.path.abspath(copied.stream.stream_path)).resolve() == (project / "take.csv").resolve()
    assert Path(bpy.path.abspath(copied.library.databases[0].path)).resolve() == \
        (project / "scene.vr_avatar_db.npz").resolve()
