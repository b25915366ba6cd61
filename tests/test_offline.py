import socket

import pytest

from labkit.offline import NetworkBlocked, offline_kernel_env


def test_connection_to_another_machine_is_refused():
    # The labkit pytest plugin has blocked the network for this whole test run.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(NetworkBlocked, match="blocked"):
        sock.connect(("192.0.2.1", 443))


def test_name_lookup_of_a_remote_host_is_refused():
    with pytest.raises(NetworkBlocked):
        socket.getaddrinfo("api.openai.com", 443)


def test_network_blocked_is_an_os_error():
    assert issubclass(NetworkBlocked, OSError)


def test_loopback_connection_is_allowed():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5) as client:
            accepted, peer = server.accept()
            with accepted:
                client.sendall(b"ping")
                assert accepted.recv(4) == b"ping"
            assert peer[0] == "127.0.0.1"


def test_kernel_environment_is_offline_replay_without_key(tmp_path):
    env = offline_kernel_env({"OPENAI_API_KEY": "sk-test", "LABKIT_MODE": "live", "PATH": "/bin"}, ipython_dir=tmp_path)
    assert env["LABKIT_MODE"] == "replay"
    assert "OPENAI_API_KEY" not in env
    assert (tmp_path / "profile_default" / "startup" / "00-labkit-offline.py").is_file()


def test_a_kernel_started_with_that_environment_refuses_the_network(tmp_path):
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", env=offline_kernel_env(ipython_dir=tmp_path / "ipython"))
    outputs = []
    try:
        reply = client.execute_interactive(
            "import socket\ntry:\n    socket.getaddrinfo('example.com', 80)\nexcept OSError as e:\n    print(type(e).__name__)",
            timeout=60,
            output_hook=outputs.append,
        )
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok"
    assert "NetworkBlocked" in "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")


def test_a_raw_socket_connection_is_refused():
    import _socket

    raw = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        with pytest.raises(NetworkBlocked, match=r"192\.0\.2\.1"):
            raw.connect(("192.0.2.1", 443))
    finally:
        raw.close()


def test_a_udp_datagram_to_another_machine_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, pytest.raises(NetworkBlocked):
        sock.sendto(b"x", ("192.0.2.1", 53))


def test_a_command_run_in_the_namespace_has_no_route_out_but_has_loopback():
    import subprocess
    import sys

    from labkit.offline import network_namespace_available

    if not network_namespace_available():
        pytest.skip("this system allows no network namespace; the Python block is the guard")
    probe = (
        "import socket\n"
        "for host in ('192.0.2.1', '127.0.0.1'):\n"
        "    try:\n"
        "        socket.create_connection((host, 9), timeout=5)\n"
        "    except OSError as exc:\n"
        "        print(host, exc.errno)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "labkit.offline", sys.executable, "-I", "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
    )
    import errno

    assert done.stdout.split("\n")[:2] == [f"192.0.2.1 {errno.ENETUNREACH}", f"127.0.0.1 {errno.ECONNREFUSED}"]


def test_without_a_namespace_the_guard_says_python_block_only(monkeypatch):
    from labkit import offline

    monkeypatch.setenv("LABKIT_NETNS", "0")
    offline.network_namespace_available.cache_clear()
    try:
        assert offline.offline_guard() == offline.GUARD_PYTHON
        env = offline_kernel_env({"PATH": "/bin"}, ipython_dir=None)
        assert env["LABKIT_OFFLINE_GUARD"] == offline.GUARD_PYTHON and "JUPYTER_PATH" not in env
    finally:
        offline.network_namespace_available.cache_clear()
