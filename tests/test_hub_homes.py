"""Learners' homes: the student copy arrives once, and a learner's work is never overwritten."""

import nbformat
import pytest

from labkit.course import hub_homes
from labkit.course.hub_homes import STAGING_PREFIX, give_to, seed_home
from labkit.paths import notebooks_dir


def notebooks():
    return sorted(notebooks_dir().glob("0[36]_*.ipynb"))


def test_a_new_home_receives_the_student_copy(tmp_path):
    home = tmp_path / "alice"
    assert seed_home(home, notebooks()) == "seeded"
    names = sorted(p.name for p in (home / "course").iterdir())
    assert names == [p.name for p in notebooks()]
    copy = nbformat.read(home / "course" / names[0], as_version=4)
    assert all(not cell.get("outputs") for cell in copy.cells if cell.cell_type == "code")
    assert not list(home.glob(f"{STAGING_PREFIX}*"))


def test_a_later_seeding_keeps_the_learners_edited_work_and_adds_nothing(tmp_path):
    home = tmp_path / "alice"
    seed_home(home, notebooks())
    lesson = home / "course" / notebooks()[0].name
    lesson.write_text("my own work", encoding="utf-8")
    (home / "course" / notebooks()[1].name).unlink()
    assert seed_home(home, notebooks()) == "kept"
    assert lesson.read_text(encoding="utf-8") == "my own work"
    assert not (home / "course" / notebooks()[1].name).exists()


@pytest.mark.parametrize("kind", ["file", "empty folder", "symlink"])
def test_anything_named_course_counts_as_the_learners_and_is_kept(tmp_path, kind):
    home = tmp_path / "bob"
    home.mkdir()
    course = home / "course"
    if kind == "file":
        course.write_text("notes", encoding="utf-8")
    elif kind == "empty folder":
        course.mkdir()
    else:
        course.symlink_to(tmp_path / "elsewhere")
    assert seed_home(home, notebooks()) == "kept"
    assert not (tmp_path / "elsewhere").exists()


def test_an_interrupted_seeding_leaves_no_course_and_the_next_one_completes(tmp_path, monkeypatch):
    home = tmp_path / "carol"

    def broken(destination, notebooks):
        (destination / "half.ipynb").write_text("{", encoding="utf-8")
        raise OSError("disk full")

    monkeypatch.setattr("labkit.course.workshop.export_workshop", broken)
    with pytest.raises(OSError, match="disk full"):
        seed_home(home, notebooks())
    assert not (home / "course").exists() and not list(home.glob(f"{STAGING_PREFIX}*"))
    monkeypatch.undo()
    (home / f"{STAGING_PREFIX}left-by-a-crash").mkdir()
    assert seed_home(home, notebooks()) == "seeded"
    assert not list(home.glob(f"{STAGING_PREFIX}*"))


def test_giving_a_home_to_its_learner_never_follows_a_symlink_out_of_it(tmp_path, monkeypatch):
    home, outside = tmp_path / "home", tmp_path / "outside"
    home.mkdir()
    outside.write_text("not the learner's", encoding="utf-8")
    (home / "link").symlink_to(outside)
    calls = []
    monkeypatch.setattr(
        hub_homes.os, "chown", lambda path, uid, gid, follow_symlinks=True: calls.append((path, follow_symlinks))
    )
    give_to(home, 1234, 1234)
    assert {str(p) for p, _ in calls} == {str(home), str(home / "link")}
    assert all(follow is False for _, follow in calls)


def test_the_account_of_a_learner_carries_the_prefix_so_no_learner_is_root():
    assert hub_homes.account_name("root", "learner-") == "learner-root"


def test_only_accounts_the_hub_made_are_listed_for_removal(monkeypatch):
    import pwd

    entries = [
        pwd.struct_passwd(("learner-alice", "x", 900, 900, hub_homes.ACCOUNT_MARK, "/h/alice", "/usr/sbin/nologin")),
        pwd.struct_passwd(("learner-ops", "x", 901, 901, "an operator", "/home/ops", "/bin/bash")),
        pwd.struct_passwd(("alice", "x", 1000, 1000, hub_homes.ACCOUNT_MARK, "/home/alice", "/bin/bash")),
    ]
    monkeypatch.setattr(pwd, "getpwall", lambda: entries)
    assert hub_homes.hub_accounts("learner-") == ["learner-alice"]


def test_an_existing_account_the_hub_did_not_make_is_refused(monkeypatch, tmp_path):
    import pwd

    entry = pwd.struct_passwd(("learner-ops", "x", 901, 901, "an operator", "/home/ops", "/bin/bash"))
    monkeypatch.setattr(pwd, "getpwnam", lambda name: entry)
    with pytest.raises(hub_homes.LearnerAccountConflict, match="was not made by the hub"):
        hub_homes.ensure_account("learner-ops", tmp_path)


def test_a_folder_others_may_not_pass_is_named(tmp_path):
    closed = tmp_path / "closed"
    (closed / "python").mkdir(parents=True)
    modes = {closed: 0o700}
    assert hub_homes._blocking_folder([closed / "python"], mode=lambda p: modes.get(p, 0o755)) == closed
    modes[closed] = 0o711
    assert hub_homes._blocking_folder([closed / "python"], mode=lambda p: modes.get(p, 0o755)) is None
