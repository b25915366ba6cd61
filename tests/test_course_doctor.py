import json
import shutil

import nbformat
import pytest

from labkit.cli import main
from labkit.course import doctor
from labkit.paths import project_root

CHECKOUT = project_root()  # read before the `course` fixture points LABKIT_ROOT at a copy


@pytest.fixture
def course(course):
    shutil.copyfile(CHECKOUT / "constraints.txt", course / "constraints.txt")
    (course / "notebooks").mkdir()
    return course


def _notebook(path, source):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_doctor_passes_on_a_healthy_course(course, capsys):
    _notebook(course / "notebooks" / "01_ok.ipynb", "print(1)")
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "ok    notebook 01_ok.ipynb" in out and "checks passed" in out and "FAIL" not in out


def test_doctor_catches_a_failing_notebook(course, capsys):
    _notebook(course / "notebooks" / "01_broken.ipynb", "raise RuntimeError('laptop problem')")
    assert main(["doctor"]) == 1
    line = next(row for row in capsys.readouterr().out.splitlines() if "01_broken" in row)
    assert line.startswith("FAIL") and "laptop problem" in line and "labkit run 01" in line


def test_doctor_catches_a_tampered_recorded_run(course, capsys):
    path = course / "recorded_runs" / "06-routing-smollm2" / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["bindings"][0]["response"]["choices"][0]["message"]["content"] = '{"id": "t1", "route": "urgent_support"}'
    data["bindings"][0]["request"]["messages"][1]["content"] += " "
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["doctor", "--skip-notebooks"]) == 1
    line = next(row for row in capsys.readouterr().out.splitlines() if "run 06-routing-smollm2" in row)
    assert line.startswith("FAIL") and "edited after recording" in line


def test_doctor_reports_a_package_at_an_untested_version(course, monkeypatch):
    real = doctor.importlib.metadata.version
    monkeypatch.setattr(doctor.importlib.metadata, "version", lambda name: "0.0.1" if name == "openai" else real(name))
    check = doctor.check_dependencies()
    assert not check.ok and "openai 0.0.1 (tested" in check.detail


def test_doctor_flags_a_full_disk():
    assert not doctor.check_disk(minimum=10**18).ok


def test_absent_extra_is_reported_not_failed(monkeypatch):
    monkeypatch.setattr(doctor.importlib.util, "find_spec", lambda name: None)
    checks = doctor.check_extras()
    assert all(c.ok for c in checks) and all('pip install -c constraints.txt -e ".[' in c.detail for c in checks)


def test_an_absent_extra_is_called_absent_once_with_what_it_enables_and_how_to_add_it(monkeypatch):
    monkeypatch.setattr(doctor.importlib.util, "find_spec", lambda name: None)
    local = next(c for c in doctor.check_extras() if c.name == "extra local")
    assert local.detail.count("absent") == 1 and local.detail.startswith("absent; it enables labkit serve")
    assert local.detail.endswith('To add it: pip install -c constraints.txt -e ".[local]"')


def test_the_slow_checks_run_two_at_a_time_and_report_as_one_at_a_time_does(course):
    shutil.rmtree(course / "recorded_runs")  # their check still runs (and fails), without minutes of secret scanning
    (course / "recorded_runs").mkdir()
    _notebook(course / "notebooks" / "01_ok.ipynb", "print(1)")
    _notebook(course / "notebooks" / "02_broken.ipynb", "raise RuntimeError('laptop problem')")
    one = [(c.name, c.ok) for c in doctor.run_checks(jobs=1)]
    two = [(c.name, c.ok) for c in doctor.run_checks(jobs=2)]
    assert two == one
    names = [name for name, _ in one]
    assert names.index("notebook 02_broken.ipynb") == names.index("notebook 01_ok.ipynb") + 1
    assert names.index("notebook 02_broken.ipynb") < names.index("secret scan")
    assert ("notebook 02_broken.ipynb", False) in two


def test_doctor_fails_on_an_edited_reply_alone_naming_the_run_and_the_field(course, capsys):
    path = course / "recorded_runs" / "06-routing-smollm2" / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["bindings"][0]["response"]["choices"][0]["message"]["content"] = '{"id": "t1", "route": "urgent_support"}'
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["doctor", "--skip-notebooks"]) == 1
    line = next(row for row in capsys.readouterr().out.splitlines() if "run 06-routing-smollm2" in row)
    assert line.startswith("FAIL") and "bindings.0" in line and "field 'response' was edited" in line


def test_doctor_with_constraints_missing_fails_that_line_and_says_how_to_restore_it(course, capsys):
    (course / "constraints.txt").unlink()
    assert main(["doctor", "--skip-notebooks"]) == 1
    line = next(row for row in capsys.readouterr().out.splitlines() if "dependencies" in row)
    assert line.startswith("FAIL") and "constraints.txt is missing" in line and "git checkout" in line


def test_doctor_reports_the_offline_guard(course, capsys):
    from labkit.offline import offline_guard

    assert main(["doctor", "--skip-notebooks"]) == 0
    line = next(row for row in capsys.readouterr().out.splitlines() if "offline guard" in row)
    assert line.startswith("ok") and line.endswith(offline_guard())


@pytest.mark.parametrize(("version", "ok"), [((3, 11, 4, "final", 0), False), ((3, 11, 5, "final", 0), True)])
def test_python_below_the_oldest_version_the_pins_install_on_is_a_failed_check(monkeypatch, version, ok):
    monkeypatch.setattr(doctor.sys, "version_info", version)
    check = doctor.check_python()
    assert check.ok is ok
    assert ("install Python 3.11.5 or newer" in check.detail) is not ok


def test_doctor_names_the_signer_of_each_run_and_the_trust_root(course):
    from labkit.signing import read_allowed_signers

    checks = {check.name: check for check in doctor.check_recorded_runs()}
    assert checks["run 02-rag-smollm2"].detail == "captured, SmolLM2-135M-Instruct, 2 bindings, signed by labkit-course"
    assert checks["run 02-rag-authored"].detail.startswith("authored, authored-by-course, 2 bindings, signed by")
    [course_key] = read_allowed_signers()
    assert checks["run signers"].ok and checks["run signers"].detail == (
        f"recorded_runs/allowed_signers (the trust root) lists labkit-course {course_key.fingerprint} "
        "signed 18 of the runs"
    )


def test_doctor_fails_a_resealed_run_whose_signature_was_deleted_and_says_how_to_sign(course):
    from tests.signers import reseal_edited_reply

    reseal_edited_reply("06-routing-smollm2", '{"id": "t1", "route": "urgent_support"}', keep_signature=False)
    checks = {check.name: check for check in doctor.check_recorded_runs()}
    check = checks["run 06-routing-smollm2"]
    assert not check.ok and "captured run '06-routing-smollm2' is unsigned" in check.detail
    assert "`labkit sign 06-routing-smollm2`" in check.detail


def test_doctor_fails_when_allowed_signers_is_gone(course):
    (course / "recorded_runs" / "allowed_signers").unlink()
    checks = {check.name: check for check in doctor.check_recorded_runs()}
    assert not checks["run signers"].ok
    assert checks["run signers"].detail == "recorded_runs/allowed_signers lists no key; restore it from git"
    assert "which recorded_runs/allowed_signers does not list" in checks["run 02-rag-smollm2"].detail


def test_with_two_jobs_the_slow_checks_run_in_processes_of_their_own_in_the_order_given():
    import os

    assert doctor._at_once([(os.getpid, ()), (str, (7,))], jobs=1) == [os.getpid(), "7"]
    pid, seven = doctor._at_once([(os.getpid, ()), (str, (7,))], jobs=2)
    assert pid != os.getpid() and seven == "7"
    assert min(2, os.cpu_count() or 1) == doctor.JOBS
