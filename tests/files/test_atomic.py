"""Files written together: a command's outputs replace the earlier ones all at its end, or none does."""
import os
import resource
import signal
import stat

import pytest

from core.errors import OutputError
from core.files.atomic import check_outputs, together, write_text


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
