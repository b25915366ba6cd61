"""Lesson 06: the penalty-weighted routing regression gate, with simulated and captured runs.

- `labkit.routing.grader`: strict loading of a suite and two runs; `score` (one run's correct
  routes, penalty points and urgent misses), `release_reasons` (the three-condition release rule
  with its optional protected cases), `compare` (both runs and the rule: the report), `explain`,
  confusion and slices.
- `labkit.routing.command`: the gate as a CI job runs it (`labkit grade-routes` in a fresh
  process), with its exit codes 0, 2 and 1.
- `labkit.routing.suite`: the fictional suite, the simulated baseline and candidate and the
  unlabelled model inputs (``python -m labkit.routing.suite``), and the bad inputs the gate refuses.
- `labkit.routing.runs`: the first captured run, in which the model echoed each ticket id (and rewrote one).
- `labkit.routing.prompts`: the lesson's recordable requests: two prompt versions over the same suite, the
  model returning only a route and the application keeping the ids; `captured_pair` gives the gate two
  captured runs.
- `labkit.routing.practice`: the exercises' what-if runs and suites (`with_routes`, `with_penalties`), and
  their checks (`check_smallest_repair`, `check_passing_trade`, ...).

Importing this package imports nothing heavy.
"""
