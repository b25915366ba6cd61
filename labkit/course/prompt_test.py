"""Record lesson 05's prompt test again: the lesson's requests unchanged, then with the corrected prompt.

``python -m labkit.course.prompt_test`` sends both sets of requests to the endpoint in
``LABKIT_BASE_URL`` (a served model) and saves them as `labkit.system.prompt_fix.RUN_BASELINE`
and `RUN_CAPTURED`; it refuses a run id that exists before any request is made.
"""

from __future__ import annotations

import argparse

from labkit.course.lessons import lesson_module, record_captured
from labkit.system import prompt_fix


def main(argv: list[str] | None = None) -> int:
    """Record `RUN_BASELINE` and `RUN_CAPTURED` against the endpoint in ``LABKIT_BASE_URL``."""
    parser = argparse.ArgumentParser(prog="python -m labkit.course.prompt_test", description=main.__doc__)
    parser.parse_args(argv)
    for module, run_id in ((lesson_module("05"), prompt_fix.RUN_BASELINE), (prompt_fix, prompt_fix.RUN_CAPTURED)):
        print(record_captured("05", run_id=run_id, module=module))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
