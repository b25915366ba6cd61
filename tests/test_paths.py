from labkit.paths import portable_text, project_root, relative_to_root, scratch_dir


def test_portable_text_writes_project_and_scratch_paths_relative():
    text = f"see {project_root() / 'fixtures' / 'a.json'} and {scratch_dir() / 'x' / 'b.json'}"
    assert portable_text(text) == "see fixtures/a.json and scratch/x/b.json"


def test_scratch_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_SCRATCH", str(tmp_path / "s"))
    assert scratch_dir() == tmp_path / "s" and scratch_dir().is_dir()


def test_paths_inside_the_project_print_relative():
    assert relative_to_root(project_root() / "fixtures" / "docs") == "fixtures/docs"
