"""Lesson 01's fixtures: written by a script, byte-identical on rerun, checked against each other at load."""

import json
import shutil

import pytest

from labkit.canonical import pretty_json
from labkit.errors import FixtureOverwriteRefused
from labkit.evaluator.fixtures import main, write_evaluator_fixtures
from labkit.evaluator.labels import load_labels
from labkit.evaluator.products import EvaluatorFixtureError, load_products, parse_products
from labkit.evaluator.rubric import load_rubric
from labkit.paths import fixtures_dir


def test_rewriting_the_fixtures_gives_the_committed_bytes(tmp_path):
    write_evaluator_fixtures(tmp_path)
    committed = fixtures_dir() / "evaluator"
    for path in sorted(committed.glob("*.json")):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_fixture_script_refuses_a_folder_holding_a_captured_run(tmp_path, capsys):
    shutil.copy(next((fixtures_dir().parent / "recorded_runs").glob("*-smollm2/run.json")), tmp_path / "run.json")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(FixtureOverwriteRefused, match="captured run"):
        write_evaluator_fixtures(tmp_path)
    assert main([str(tmp_path)]) == 1 and "captured run" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_products_include_the_six_hour_lantern_and_at_least_twenty_products():
    products = load_products()
    assert len(products) >= 20
    lantern = products["p07"].facts.battery_life
    assert (lantern.value, lantern.unit) == (6, "h")


def test_repeated_product_id_is_refused(tmp_path):
    data = json.loads((fixtures_dir() / "evaluator" / "products.json").read_text())
    data["products"][1]["id"] = "p01"
    with pytest.raises(EvaluatorFixtureError, match="'p01' appears twice"):
        parse_products(data)


def test_fact_in_the_wrong_unit_is_refused():
    data = json.loads((fixtures_dir() / "evaluator" / "products.json").read_text())
    data["products"][6]["facts"]["battery_life"]["unit"] = "g"
    with pytest.raises(EvaluatorFixtureError, match="battery_life is given in h"):
        parse_products(data)


def _labels_with(tmp_path, change):
    path = tmp_path / "human_labels.json"
    data = json.loads((fixtures_dir() / "evaluator" / "human_labels.json").read_text())
    change(data)
    path.write_text(pretty_json(data))
    products = load_products()
    return lambda: load_labels(rubric=load_rubric(), products=list(products), path=path)


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda d: d["subsets"]["held_out"].append("p01"), "in both subsets"),
        (lambda d: d["subsets"]["held_out"].remove("p07"), "every product exactly once"),
        (lambda d: d["items"][0].update(description_sha256="0" * 64), "labeled on another text"),
        (lambda d: d["items"][0]["labels"]["tone"].update(rater_b="great"), "not among"),
        (lambda d: d["items"][0]["labels"]["tone"].pop("rater_a"), "needs a label from each rater"),
    ],
)
def test_inconsistent_human_labels_are_refused(tmp_path, change, message):
    with pytest.raises(EvaluatorFixtureError, match=message):
        _labels_with(tmp_path, change)()


def test_every_product_has_two_raters_labels_on_every_criterion():
    products = load_products()
    rubric = load_rubric()
    labels = load_labels(rubric=rubric, products=list(products))
    assert len(labels.labels) == len(products) * len(rubric.criteria)
    assert set(labels.calibration).isdisjoint(labels.held_out) and "p07" in labels.held_out
