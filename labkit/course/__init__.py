"""What runs the course rather than teaches it: tools for learners' laptops, instructors and CI.

- `labkit.course.runner`: execute notebooks headless and offline; status and time per notebook.
- `labkit.course.doctor`: the offline workshop preflight.
- `labkit.course.workshop`: student copies of the notebooks and the exercise checker.
- `labkit.course.variants`: the catalogue of authored bad replies, each run through its real check.
- `labkit.course.lessons`: which lessons make model calls, and how their runs are written or recorded.
- `labkit.course.sign_runs`: `labkit sign`, which signs only runs that pass every check of `labkit verify`.
- `labkit.course.evaluate` and `labkit.course.report_card`: `labkit evaluate`'s report of one model, and its page.
- `labkit.course.pytest_plugin`: keeps the test process and every notebook kernel offline.
- `labkit.course.hub` (with `hub_config`, `hub_homes`, `hub_spawner`, `hub_singleuser`, `hub_proxy`,
  `hub_checks`, `hub_client`): the workshop room on one server, JupyterHub with a home per learner.

Lessons never import from here; this package imports lessons and the foundation.
"""
