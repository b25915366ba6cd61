"""The pytest plugin: nbval's kernels run offline, inside the network namespace where the system allows it."""

import pytest

from labkit.offline import GUARD_NAMESPACE, network_namespace_available


def test_an_nbval_kernel_runs_under_the_same_guard_as_the_runner():
    from nbval.kernel import start_new_kernel

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
