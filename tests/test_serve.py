import contextlib
import importlib.metadata
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import psutil
import pytest

from labkit import serve
from labkit.cli import main
from labkit.errors import MissingExtra
from labkit.serve import (
    MODEL_ID,
    LocalServerError,
    free_port,
    local_model_server,
    local_response_format,
    start_local_server,
)


def _local_extra_installed() -> bool:
    try:
        serve.find_gguf()
        serve.require_server_modules()
    except MissingExtra:
        return False
    return True


needs_local = pytest.mark.skipif(
    not _local_extra_installed(), reason="needs the [local] extra (the model and a runtime)"
)

# A stand-in for llama_cpp.server, so the process handling is tested without the extra.
FAKE_SERVER = """
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
port = int(sys.argv[sys.argv.index("--port") + 1])
alias = sys.argv[sys.argv.index("--model_alias") + 1]
class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": alias, "object": "model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
print("fake server listening", flush=True)
HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        with contextlib.suppress(psutil.TimeoutExpired, psutil.NoSuchProcess, ChildProcessError):
            psutil.Process(pid).wait(timeout=0.2)
    return _gone(pid)


@pytest.fixture(autouse=True)
def server_logs_in_tmp(tmp_path, monkeypatch):
    """Keep the server's log folder under tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.fixture
def fake_llama_server(tmp_path, monkeypatch):
    """Make start_local_server run FAKE_SERVER (or a given script) instead of llama_cpp.server."""
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(serve, "find_gguf", lambda: gguf)
    monkeypatch.setattr(serve, "require_server_modules", lambda: None)

    def use(script: str = FAKE_SERVER) -> None:
        def command(gguf, port, **settings):
            return [sys.executable, "-c", script, "--port", str(port), "--model_alias", MODEL_ID]

        monkeypatch.setattr(serve, "_command", command)

    use()
    return use


# --- without the extra ----------------------------------------------------------------------------


def test_missing_local_extra_names_the_pip_command(monkeypatch):
    def no_such_distribution(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(serve.importlib.metadata, "distribution", no_such_distribution)
    with pytest.raises(MissingExtra) as caught, local_model_server():
        pass
    assert 'pip install -c constraints.txt -e ".[local]"' in str(caught.value)


def test_serve_command_without_the_extra_exits_1_with_the_pip_command(monkeypatch, capsys):
    def no_such_distribution(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(serve.importlib.metadata, "distribution", no_such_distribution)
    assert main(["serve"]) == 1
    assert '".[local]"' in capsys.readouterr().err


def test_free_port_can_be_bound_on_loopback():
    port = free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        assert sock.getsockname() == ("127.0.0.1", port)


def test_server_is_ready_when_models_answers_and_leaves_no_process_behind(fake_llama_server):
    with local_model_server() as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert server.model_id == MODEL_ID
        pid = server.process.pid
        assert not _gone(pid)
        assert os.getpgid(pid) == pid  # its own process group: a terminal's Ctrl-C reaches only labkit
    assert _gone(pid)
    assert not server.log_path.exists()


def test_server_that_dies_at_startup_reports_its_last_lines(fake_llama_server):
    fake_llama_server("import sys; print('error loading model: bad magic'); sys.exit(3)")
    with pytest.raises(LocalServerError, match=r"(?s)code 3.*bad magic"), local_model_server():
        pass


def test_server_that_never_answers_is_stopped_after_the_timeout(fake_llama_server):
    fake_llama_server("import time; print('loading', flush=True); time.sleep(600)")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(LocalServerError, match="did not answer"):
        start_local_server(timeout=1.0)
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and not _gone(p.pid)]
    assert left == []


def test_busy_port_is_refused_with_a_clear_message(fake_llama_server):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(LocalServerError, match=f"port {port} .* is in use"):
            start_local_server(port=port)


def test_a_stray_api_key_in_the_environment_does_not_reach_the_server(monkeypatch):
    monkeypatch.setenv("API_KEY", "secret")
    monkeypatch.setenv("CONFIG_FILE", "/elsewhere.json")
    monkeypatch.setenv("LABKIT_KEEP", "1")
    env = serve._child_env()
    assert "API_KEY" not in env and "CONFIG_FILE" not in env
    assert env["LABKIT_KEEP"] == "1"


# --- with the [local] extra: the real model -------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not _local_extra_installed():
        pytest.skip("needs the [local] extra (the model and a runtime)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("server-logs")))
        with local_model_server() as running:
            yield running


@pytest.fixture
def client(server):
    openai = pytest.importorskip("openai")
    with openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0, timeout=120) as client:
        yield client


def test_local_model_answers_a_chat_completion_through_the_openai_client(server, client):
    reply = client.chat.completions.create(
        model=server.model_id,
        messages=[{"role": "user", "content": "Say hello in one short sentence."}],
        temperature=0,
        seed=0,
        max_tokens=24,
    )
    assert reply.model == MODEL_ID
    assert reply.choices[0].message.content.strip()
    assert reply.usage.completion_tokens > 0


def test_a_reply_does_not_depend_on_the_requests_before_it(server, client):
    def ask(content):
        return (
            client.chat.completions.create(
                model=server.model_id,
                messages=[{"role": "user", "content": content}],
                temperature=0,
                seed=0,
                max_tokens=24,
            )
            .choices[0]
            .message.content
        )

    # Without full prompt evaluation the second reply differed from the first (llama-cpp-python 0.3.36).
    hello = "Say hello in one short sentence."
    first = ask(hello)
    assert ask(hello) == first
    ask("Give one tip for sleeping well.")
    assert ask(hello) == first


REFUND_SCHEMA = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["approve", "deny"]},
        "reason": {"type": "string"},
    },
    "required": ["decision", "reason"],
    "additionalProperties": False,
}


def test_schema_in_the_local_response_format_gives_a_reply_that_parses(server, client):
    reply = client.chat.completions.create(
        model=server.model_id,
        messages=[{"role": "user", "content": "A customer returned shoes after 3 days. Decide the refund, as JSON."}],
        response_format=local_response_format(REFUND_SCHEMA),
        temperature=0,
        seed=0,
        max_tokens=96,
    )
    answer = json.loads(reply.choices[0].message.content)
    assert set(answer) == {"decision", "reason"}
    assert answer["decision"] in {"approve", "deny"}
    assert isinstance(answer["reason"], str)


def test_openai_json_schema_form_is_refused_by_this_server_version(server, client):
    """If this starts passing, llama-cpp-python accepts OpenAI's form: update labkit/serve.py's docstring."""
    if serve.local_runtime() != "llama-cpp-python":
        pytest.skip("llama-cpp-python's server only; llama.cpp's (xllamacpp) accepts OpenAI's form")
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.APIStatusError, match="json_object"):
        client.chat.completions.create(
            model=server.model_id,
            messages=[{"role": "user", "content": "Decide on the refund, as JSON."}],
            response_format={"type": "json_schema", "json_schema": {"name": "refund", "schema": REFUND_SCHEMA}},
            temperature=0,
            seed=0,
            max_tokens=8,
        )


def _start_in_child(code: str, tmp_path) -> tuple[subprocess.Popen, "queue.Queue[str]"]:
    process = subprocess.Popen(
        [sys.executable, "-c", code] if code else [sys.executable, "-m", "labkit", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # the server's log folder, left behind by a killed parent
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in process.stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    return process, lines


def _read_fields(process: subprocess.Popen, lines: queue.Queue, wanted: set[str], timeout: float = 180.0) -> dict:
    fields: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while not wanted <= set(fields):
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            process.kill()
            missing = sorted(wanted - set(fields))
            pytest.fail(f"no {missing} within {timeout:.0f} s; stderr: {process.stderr.read()[-2000:]}")
        if line == "":
            code = process.wait()
            pytest.fail(f"exited with {code} before printing {sorted(wanted)}: {process.stderr.read()[-2000:]}")
        key, _, value = line.partition(": ")
        fields[key] = value.strip()
    return fields


@needs_local
def test_stop_sends_sigterm_and_leaves_no_orphan():
    server = start_local_server()
    pid = server.process.pid
    code = server.stop()
    assert code == -signal.SIGTERM or code == 0  # it exited on SIGTERM, not after the SIGKILL fallback
    assert _gone(pid)


@needs_local
def test_serve_command_prints_the_base_url_and_stops_cleanly_on_sigterm(tmp_path):
    process, lines = _start_in_child("", tmp_path)
    try:
        fields = _read_fields(process, lines, {"base_url", "model", "pid"})
        assert fields["base_url"].startswith("http://127.0.0.1:") and fields["base_url"].endswith("/v1")
        assert fields["model"] == MODEL_ID
        import httpx2

        models = httpx2.get(fields["base_url"] + "/models", timeout=10, trust_env=False).json()
        assert [m["id"] for m in models["data"]] == [MODEL_ID]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        assert _wait_gone(int(fields["pid"]))
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@needs_local
def test_a_killed_parent_leaves_no_orphan_server(tmp_path):
    code = (
        "from labkit.serve import local_model_server\n"
        "with local_model_server() as s:\n"
        "    print(f'pid: {s.process.pid}', flush=True)\n"
        "    s.process.wait()\n"
    )
    process, lines = _start_in_child(code, tmp_path)
    try:
        child = int(_read_fields(process, lines, {"pid"})["pid"])
        process.kill()  # SIGKILL: the parent gets no chance to clean up
        process.wait(timeout=30)
        assert _wait_gone(child), "the server outlived its killed parent"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_real_reply_is_recorded_in_record_mode_and_replayed_offline(server, tmp_path, monkeypatch):
    from labkit.boundary import connect
    from labkit.recording import load_run

    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "question.txt").write_text("Name one colour.\n", encoding="utf-8")
    monkeypatch.setenv("LABKIT_ROOT", str(tmp_path))
    monkeypatch.setenv("LABKIT_BASE_URL", server.base_url)
    monkeypatch.setenv("LABKIT_MODEL", server.model_id)
    settings = {"temperature": 0, "seed": 0, "max_tokens": 12}
    messages = [{"role": "user", "content": "Name one colour."}]

    recorder = connect("live-check", lesson="02", settings=settings, mode="record")
    live_text = recorder.chat(messages, question="Name one colour.").choices[0].message.content
    path = recorder.save(description="A live test reply.", fixtures=["fixtures/question.txt"], run_id="live-check-1")

    run = load_run(path.parent)
    assert run.origin == "captured" and run.model.endpoint_kind == "local-llama-cpp"
    assert run.bindings[0].usage.completion_tokens > 0 and run.bindings[0].latency_s > 0

    def no_sockets(*args, **kwargs):
        raise AssertionError("replay tried to reach the server")

    monkeypatch.setattr(socket.socket, "connect", no_sockets)
    replayed = connect("live-check-1", lesson="02", settings=settings, mode="replay").chat(messages)
    assert replayed.choices[0].message.content == live_text


@needs_local
def test_served_model_loads_without_weight_repacking(monkeypatch):
    """On AMX CPUs a repacked model dies with SIGSEGV at its first reply; the serve child turns repacking off."""
    bindings = pytest.importorskip("llama_cpp.llama_cpp", reason="llama-cpp-python (the local-source extra)")

    monkeypatch.setattr(bindings, "llama_model_default_params", bindings.llama_model_default_params)
    assert bindings.llama_model_default_params().use_extra_bufts is True
    serve.without_weight_repacking()
    assert bindings.llama_model_default_params().use_extra_bufts is False


def test_the_prebuilt_runtime_comes_first_and_the_choice_can_be_forced(monkeypatch):
    installed = {"xllamacpp": True, "llama-cpp-python": True}
    monkeypatch.setattr(serve, "_installed", lambda runtime: installed[runtime])
    monkeypatch.delenv(serve.RUNTIME_ENV, raising=False)
    assert serve.local_runtime() == "xllamacpp"
    monkeypatch.setenv(serve.RUNTIME_ENV, "llama-cpp-python")
    assert serve.local_runtime() == "llama-cpp-python"
    installed["llama-cpp-python"] = False
    with pytest.raises(MissingExtra, match=r'"\.\[local-source\]"'):
        serve.local_runtime()
    monkeypatch.setenv(serve.RUNTIME_ENV, "vllm")
    with pytest.raises(LocalServerError, match="not a runtime"):
        serve.local_runtime()
    monkeypatch.delenv(serve.RUNTIME_ENV)
    installed["xllamacpp"] = False
    with pytest.raises(MissingExtra, match="xllamacpp or llama-cpp-python"):
        serve.local_runtime()


def test_the_serve_child_is_told_its_runtime(monkeypatch, tmp_path):
    monkeypatch.setattr(serve, "local_runtime", lambda: "xllamacpp")
    command = serve._command(tmp_path / "m.gguf", 8080, ctx=2048, seed=0, threads=1)
    assert command[1:5] == ["-m", "labkit.serve", "--runtime", "xllamacpp"]
    assert command[command.index("--model_alias") + 1] == MODEL_ID


def test_the_xllamacpp_child_is_set_up_as_the_llama_cpp_python_one(monkeypatch):
    """Fixed seed, one slot, no prompt reuse, no weight repacking, and llama-cpp-python's repeat penalty."""
    from types import ModuleType, SimpleNamespace

    class Started(Exception):
        pass

    seen = {}

    def server(params):
        seen["params"] = params
        raise Started

    fake = ModuleType("xllamacpp")
    fake.CommonParams = lambda: SimpleNamespace(
        model=SimpleNamespace(),
        sampling=SimpleNamespace(),
        cpuparams=SimpleNamespace(),
        cpuparams_batch=SimpleNamespace(),
    )
    fake.Server = server
    monkeypatch.setitem(sys.modules, "xllamacpp", fake)
    monkeypatch.setattr(signal, "signal", lambda *args: None)
    argv = ["--model", "m.gguf", "--model_alias", MODEL_ID, "--host", "127.0.0.1", "--port", "8080"]
    argv += ["--n_ctx", "2048", "--seed", "0", "--n_threads", "1", "--n_threads_batch", "1"]
    with pytest.raises(Started):
        serve._serve_xllamacpp(argv)
    params = seen["params"]
    assert (params.model.path, params.model_alias, params.hostnames, params.port) == (
        "m.gguf",
        {MODEL_ID},
        ["127.0.0.1"],
        8080,
    )
    assert (params.n_parallel, params.cache_prompt, params.no_extra_bufts, params.sampling.seed) == (1, False, True, 0)
    assert (params.sampling.penalty_repeat, params.sampling.penalty_last_n) == (1.1, 64)
    assert params.cpuparams.n_threads == params.cpuparams_batch.n_threads == 1
