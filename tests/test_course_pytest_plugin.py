"""The pytest plugin: kernels get the real environment less keys and endpoints, import this checkout, and write
into a fresh scratch folder, so a change in a second copy of the course fails that copy's notebooks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.course.pytest_plugin import session_environment
from labkit.paths import project_root

REAL = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/student",
    "PYTHONPATH": "/opt/extra",
    "LABKIT_ROOT": "/course",
    "LANG": "C.UTF-8",
    "OPENAI_API_KEY": "sk-secret",
    "OPENAI_BASE_URL": "https://api.example.com/v1",
    "LABKIT_API_KEY": "k",
    "LABKIT_BASE_URL": "http://127.0.0.1:8080/v1",
    "ANTHROPIC_API_KEY": "k",
    "HF_ACCESS_TOKEN": "hf_x",
    "AZURE_OPENAI_ENDPOINT": "https://x.example.com",
}


def test_session_environment_keeps_the_real_environment_less_keys_and_endpoints(tmp_path):
    env = session_environment(dict(REAL), checkout=tmp_path / "course", folder=tmp_path / "session")
    kept = {"PATH", "HOME", "LABKIT_ROOT", "LANG"}
    assert {name: env[name] for name in kept} == {name: REAL[name] for name in kept}
    for name in REAL.keys() - kept - {"PYTHONPATH"}:
        assert name not in env, name
    assert env["LABKIT_MODE"] == "replay" and env["LABKIT_OFFLINE"] == "1"


def test_session_environment_puts_the_checkout_first_on_the_python_path(tmp_path):
    env = session_environment(dict(REAL), checkout=tmp_path / "course", folder=tmp_path / "session")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path / "course"), "/opt/extra"]
    again = session_environment(env, checkout=tmp_path / "course", folder=tmp_path / "session")
    assert again["PYTHONPATH"] == env["PYTHONPATH"]


def test_session_environment_gives_the_session_its_own_scratch_folder(tmp_path):
    env = session_environment(
        dict(REAL) | {"LABKIT_SCRATCH": "/course/scratch"}, checkout=tmp_path, folder=tmp_path / "s"
    )
    assert env["LABKIT_SCRATCH"] == str(tmp_path / "s" / "scratch")
    assert env["IPYTHONDIR"] == str(tmp_path / "s" / "ipython")


def test_this_test_session_kept_path_and_home_and_imports_this_checkout():
    # The plugin replaced os.environ at configure time; the kernels nbval starts copy it.
    assert os.environ.get("PATH")
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(project_root())


def _copy_of_the_course(target: Path) -> Path:
    root = project_root()
    for name in ("labkit", "fixtures", "recorded_runs"):
        shutil.copytree(root / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    (target / "notebooks").mkdir()
    shutil.copy2(root / "notebooks" / "02b_filings_rag.ipynb", target / "notebooks")
    (target / "tests").mkdir()
    shutil.copy2(root / "tests" / "nbval_sanitize.cfg", target / "tests")
    shutil.copy2(root / "pyproject.toml", target)
    return target


def _plant_zero_based_pages(copy: Path) -> None:
    index = copy / "labkit" / "rag" / "index.py"
    text = index.read_text(encoding="utf-8")
    planted = text.replace('"source_page": zero_based + 1,', '"source_page": zero_based,')
    assert planted != text, "the line to plant the bug in has changed; update this test"
    index.write_text(planted, encoding="utf-8")


def _env_for(copy: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LABKIT_ROOT", "LABKIT_SCRATCH")}
    return env | {"PYTHONPATH": str(copy)} | extra


def test_a_planted_index_bug_in_a_second_copy_fails_its_notebook_02_under_nbval(tmp_path):
    copy = _copy_of_the_course(tmp_path / "course")
    _plant_zero_based_pages(copy)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "notebooks/02b_filings_rag.ipynb"],  # -x: one failed cell will do
        cwd=copy,
        env=_env_for(copy),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "failed" in done.stdout.splitlines()[-1]


def test_a_planted_index_bug_fails_notebook_02_with_a_warm_cache(tmp_path):
    copy = _copy_of_the_course(tmp_path / "course")
    scratch = tmp_path / "warm-scratch"
    warm = (
        "from labkit.rag import lesson; from labkit.rag.index import saved_vectors; "
        "from labkit.rag.questions import load_questions; lesson.open_indexes(load_questions(), saved_vectors())"
    )
    env = _env_for(copy, LABKIT_SCRATCH=str(scratch))
    subprocess.run([sys.executable, "-c", warm], cwd=copy, env=env, check=True, capture_output=True)
    assert (scratch / "filings-index-800-100" / "cache-key.txt").is_file()
    _plant_zero_based_pages(copy)
    done = subprocess.run(
        [sys.executable, "-m", "labkit", "run", "02", "--json"], cwd=copy, env=env, capture_output=True, text=True
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert '"failed"' in done.stdout


def test_an_nbval_kernel_runs_under_the_same_guard_as_the_runner():
    from nbval.kernel import start_new_kernel

    from labkit.offline import GUARD_NAMESPACE, network_namespace_available

    manager, client = start_new_kernel(kernel_name="python3")
    outputs = []
    try:
        client.execute_interactive(
            "import os\nprint(os.environ['LABKIT_OFFLINE_GUARD'])", timeout=60, output_hook=outputs.append
        )
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream").strip()
    if not network_namespace_available():
        pytest.skip("no network namespace on this system: the Python block alone guards nbval's kernels")
    assert text == GUARD_NAMESPACE
