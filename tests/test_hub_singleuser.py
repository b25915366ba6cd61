"""A learner's server runs offline as `labkit run` does, and keeps what it needs to talk to the hub."""

from pathlib import Path

from labkit.course.hub_singleuser import singleuser_command, singleuser_environment


def test_a_learners_server_runs_in_replay_mode_without_keys_but_keeps_its_hub_token(tmp_path):
    environ = {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin",
        "OPENAI_API_KEY": "sk-secret",
        "OPENAI_BASE_URL": "https://example.invalid/v1",
        "JUPYTERHUB_API_TOKEN": "hub-token",
        "JUPYTERHUB_USER": "alice",
        "LABKIT_MODE": "live",
    }
    env = singleuser_environment(environ)
    assert env["LABKIT_MODE"] == "replay" and env["LABKIT_OFFLINE"] == "1"
    assert "OPENAI_API_KEY" not in env and "OPENAI_BASE_URL" not in env
    assert env["JUPYTERHUB_API_TOKEN"] == "hub-token" and env["JUPYTERHUB_USER"] == "alice"
    assert env["LABKIT_SCRATCH"] == str(tmp_path / "scratch")
    startup = Path(env["IPYTHONDIR"]) / "profile_default" / "startup" / "00-labkit-offline.py"
    assert "block_network()" in startup.read_text(encoding="utf-8")
    assert Path(env["IPYTHONDIR"]).is_relative_to(tmp_path)


def test_kernels_talk_over_unix_sockets_and_there_is_no_terminal(tmp_path):
    command = singleuser_command(["--debug"], sockets=tmp_path, as_root=False)
    assert command[1:3] == ["-m", "jupyterhub.singleuser"]
    assert "--KernelManager.transport=ipc" in command and f"--KernelManager.ip={tmp_path / 'kernel'}" in command
    assert "--ServerApp.terminals_enabled=False" in command and command[-1] == "--debug"
    assert "--allow-root" not in command
    assert "--allow-root" in singleuser_command([], sockets=tmp_path, as_root=True)
