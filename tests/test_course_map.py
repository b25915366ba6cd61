import re

from labkit.course.map import COMPONENTS, FLOWS, mermaid
from labkit.course.runner import course_notebooks
from labkit.paths import project_root


def test_every_notebook_teaches_a_part_of_the_map_and_every_flow_joins_two_parts():
    taught = {n for c in COMPONENTS for n in c.notebooks}
    assert taught == {p.name.partition("_")[0] for p in course_notebooks()}
    keys = {c.key for c in COMPONENTS}
    assert {end for a, b, _ in FLOWS for end in (a, b)} <= keys
    assert all(f'{c.key}["<b>{c.title}</b>' in mermaid() for c in COMPONENTS)


def test_the_readme_opens_its_lesson_table_with_the_map_drawn_by_the_course():
    readme = (project_root() / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## The course map\n") : readme.index("\n## What each notebook teaches\n")]
    block = re.search(r"```mermaid\n(.*?)\n```", section, flags=re.DOTALL)
    assert block is not None and block.group(1) == mermaid()
