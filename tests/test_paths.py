import pytest

from labkit.paths import portable_text, project_root, relative_to_root, scratch_dir


def test_portable_text_writes_project_and_scratch_paths_relative():
    text = f"see {project_root() / 'fixtures' / 'a.json'} and {scratch_dir() / 'x' / 'b.json'}"
    assert portable_text(text) == "see fixtures/a.json and scratch/x/b.json"


def test_scratch_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_SCRATCH", str(tmp_path / "s"))
    assert scratch_dir() == tmp_path / "s" and scratch_dir().is_dir()


def test_paths_inside_the_project_print_relative():
    assert relative_to_root(project_root() / "fixtures" / "docs") == "fixtures/docs"


def test_atomic_write_replaces_the_file_whole_and_leaves_no_temporary(tmp_path):
    from labkit.paths import atomic_write

    target = tmp_path / "run.json"
    target.write_text("old", encoding="utf-8")
    assert atomic_write(target, "new ✓") == target
    assert target.read_text(encoding="utf-8") == "new ✓"
    atomic_write(target, b"\x00bytes")
    assert target.read_bytes() == b"\x00bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_atomic_write_that_fails_keeps_the_old_file_and_removes_its_temporary(tmp_path, monkeypatch):
    import os

    from labkit.paths import atomic_write

    target = tmp_path / "run.json"
    target.write_text("old", encoding="utf-8")

    def broken_replace(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, "new")
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_atomic_write_gives_a_new_file_the_usual_permissions_and_keeps_an_old_files(tmp_path):
    import os
    import stat

    from labkit.paths import atomic_write

    umask = os.umask(0o022)
    try:
        new = atomic_write(tmp_path / "new.json", "{}")
        assert stat.S_IMODE(new.stat().st_mode) == 0o644
        old = tmp_path / "old.json"
        old.write_text("x", encoding="utf-8")
        old.chmod(0o640)
        atomic_write(old, "y")
        assert stat.S_IMODE(old.stat().st_mode) == 0o640
    finally:
        os.umask(umask)


def test_a_scratch_setting_that_names_a_file_is_refused_saying_what_to_do(tmp_path, monkeypatch):
    from labkit.paths import FolderNotWritable

    (tmp_path / "file").write_text("x", encoding="utf-8")
    monkeypatch.setenv("LABKIT_SCRATCH", str(tmp_path / "file"))
    with pytest.raises(FolderNotWritable) as caught:
        scratch_dir()
    assert str(caught.value) == (
        f"LABKIT_SCRATCH={tmp_path / 'file'} is a file, not a folder; point LABKIT_SCRATCH at a folder "
        "(it is created if missing)"
    )
    monkeypatch.setenv("LABKIT_SCRATCH", str(tmp_path / "file" / "below"))
    with pytest.raises(FolderNotWritable, match=r"cannot create LABKIT_SCRATCH=.*below \(Not a directory\); point"):
        scratch_dir()


def test_a_default_scratch_folder_that_is_a_file_says_so(tmp_path, monkeypatch):
    from labkit.paths import FolderNotWritable

    monkeypatch.setenv("LABKIT_ROOT", str(tmp_path))
    monkeypatch.delenv("LABKIT_SCRATCH")
    (tmp_path / "scratch").write_text("x", encoding="utf-8")
    with pytest.raises(FolderNotWritable, match=r"the scratch folder .*scratch is a file, not a folder; .* or remove"):
        scratch_dir()
