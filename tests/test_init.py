import subprocess
import sys

import labkit


def test_every_public_name_resolves():
    for name in labkit.__all__:
        assert getattr(labkit, name) is not None, name


def test_public_names_are_listed_once_and_sorted():
    assert labkit.__all__ == sorted(set(labkit.__all__))


def test_import_labkit_loads_no_heavy_library():
    code = "import sys, labkit; print(sorted(m for m in ('pandas','langchain_core','matplotlib','openai','torch','sklearn','pydantic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_attribute_is_an_attribute_error():
    try:
        labkit.not_a_name  # noqa: B018
    except AttributeError as exc:
        assert "not_a_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
