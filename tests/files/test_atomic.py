"""Files written together: a command's outputs replace the earlier ones all at its end, or none does."""
import os
import resource
import signal
import stat

import pytest

from core.errors import OutputError
from core.files.atomic import check_outputs, no_empty_folders_left, together, write_text


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_an_error_after_the_first_output_leaves_both_earlier_outputs(tmp_path):
    first, second = tmp_path / "out.bvh", tmp_path / "out.report.json"
    write_text(first, "old motion")
    write_text(second, "old report")
    with pytest.raises(RuntimeError), together():
        write_text(first, "new motion")
        assert first.read_text() == "old motion"  # not yet replaced
        raise RuntimeError("the report failed")
    assert (first.read_text(), second.read_text()) == ("old motion", "old report") and not _leftovers(tmp_path)


def test_a_full_disk_on_the_second_output_leaves_the_first_as_it_was(tmp_path):
    first, second = tmp_path / "out.bvh", tmp_path / "out.report.json"
    write_text(first, "old motion")
    write_text(second, "old report")
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        with pytest.raises(OutputError, match="out.report.json: cannot write"), together():
            write_text(first, "new motion")
            resource.setrlimit(resource.RLIMIT_FSIZE, (100, limits[1]))
            write_text(second, "x" * 1000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    assert (first.read_text(), second.read_text()) == ("old motion", "old report") and not _leftovers(tmp_path)


def test_outputs_written_together_all_arrive(tmp_path):
    with together():
        write_text(tmp_path / "a.txt", "a")
        write_text(tmp_path / "b.txt", "b")
    assert (tmp_path / "a.txt").read_text() + (tmp_path / "b.txt").read_text() == "ab"
    assert not _leftovers(tmp_path) and oct(os.stat(tmp_path / "a.txt").st_mode & 0o777) != "0o600"


def test_a_named_pipe_is_refused_and_left_in_place(tmp_path):
    pipe = tmp_path / "out.bvh"
    os.mkfifo(pipe)
    with pytest.raises(OutputError, match="out.bvh: is not a regular file"):
        check_outputs([pipe])
    with pytest.raises(OutputError, match="out.bvh: is not a regular file"):
        write_text(pipe, "motion")
    assert stat.S_ISFIFO(os.stat(pipe).st_mode) and not _leftovers(tmp_path)


def test_a_link_to_a_named_pipe_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "out.bvh").symlink_to(tmp_path / "pipe")
    with pytest.raises(OutputError, match="out.bvh: is not a regular file"):
        check_outputs([tmp_path / "out.bvh"])


def _outputs_with_old_content(folder):
    outputs = [folder / name for name in ("out.bvh", "out.report.json", "out.report.png")]
    for path in outputs:
        write_text(path, "old")
    return outputs


def test_ctrl_c_during_the_renames_waits_until_all_outputs_are_replaced(tmp_path, monkeypatch):
    outputs = _outputs_with_old_content(tmp_path)
    replace = os.replace

    def interrupted_replace(source, target):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl+C arrives between the renames
        replace(source, target)

    runner = signal.signal(signal.SIGINT, signal.default_int_handler)  # as a command line has it (a test worker may not)
    try:
        with pytest.raises(KeyboardInterrupt):
            with together():
                for path in outputs:
                    write_text(path, "new")
                monkeypatch.setattr(os, "replace", interrupted_replace)
        monkeypatch.undo()
        assert [path.read_text() for path in outputs] == ["new"] * 3 and not _leftovers(tmp_path)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, runner)


def test_a_failed_rename_removes_the_temporary_files_left(tmp_path, monkeypatch):
    outputs = _outputs_with_old_content(tmp_path)
    replace, calls = os.replace, []

    def failing_replace(source, target):
        calls.append(target)
        if len(calls) == 2:
            raise PermissionError(13, "Permission denied")
        replace(source, target)

    with pytest.raises(OutputError, match="out.report.json: cannot replace: Permission denied; 1 of 3 outputs"):
        with together():
            for path in outputs:
                write_text(path, "new")
            monkeypatch.setattr(os, "replace", failing_replace)
    monkeypatch.undo()
    assert not _leftovers(tmp_path)


def test_folders_made_for_outputs_go_again_where_nothing_was_written_in_them(tmp_path):
    """A command refused after its check (or failing while it works) leaves no empty folder it made; a written
    output keeps its folders; a folder that was there before is never removed, empty or not."""
    (tmp_path / "kept").mkdir()
    written, refused = tmp_path / "a" / "b" / "model.npz", tmp_path / "a" / "c" / "d" / "plot.png"
    with pytest.raises(RuntimeError), no_empty_folders_left():
        check_outputs([written, refused, tmp_path / "kept" / "e" / "x.json"], make_folders=True)
        assert refused.parent.is_dir()
        write_text(written, "model")
        raise RuntimeError("training failed")
    assert written.read_text() == "model"
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "a", "a/b", "a/b/model.npz", "kept"]


def test_a_file_without_write_permission_is_refused_even_for_root(tmp_path):
    """`chmod a-w` keeps a take: os.access says root may write it, the permission bits say no one should."""
    take = tmp_path / "take.bvh"
    take.write_text("final take")
    take.chmod(0o444)
    with pytest.raises(OutputError, match="is read-only"):
        check_outputs([take])
    take.chmod(0o644)
    check_outputs([take])
    assert take.read_text() == "final take"
