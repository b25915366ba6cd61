"""The course's authored data for lesson 01: products, the descriptions people labeled, and their labels.

Everything here was written for the course. The products are fictional. The
"labeled descriptions" are the texts two raters labeled against the rubric
(they are also the replies of the authored generation run), some with flaws
planted on purpose: the lantern said to run 12 hours when its facts say 6, a
bike light called waterproof, a pine shelf called oak, a pushy tone, a
missing fact, a text far too long or not JSON at all. The raters' labels are
authored too: no person was paid to label these, and the notebook says so.
"""

from __future__ import annotations

import json
from typing import Any

#: (id, name, category, battery hours or None, grams, (length, width, height) mm, materials, euros)
PRODUCT_ROWS: tuple[tuple[str, str, str, float | None, float, tuple[int, int, int], tuple[str, ...], float], ...] = (
    ("p01", "Alder Desk Lamp", "desk lamp", None, 1200, (420, 160, 160), ("aluminium", "linen"), 64.00),
    ("p02", "Brook Water Bottle", "water bottle", None, 310, (70, 70, 260), ("stainless steel",), 24.50),
    ("p03", "Cinder Skillet", "cast-iron skillet", None, 2300, (450, 260, 55), ("cast iron",), 39.90),
    ("p04", "Drift Speaker", "portable speaker", 14, 540, (180, 70, 70), ("recycled plastic", "fabric"), 79.00),
    ("p05", "Ember Hand Warmer", "rechargeable hand warmer", 8, 150, (95, 60, 22), ("aluminium",), 29.00),
    ("p06", "Fjord Rain Jacket", "rain jacket", None, 420, (300, 220, 60), ("recycled polyester",), 129.00),
    ("p07", "Trailhead Lantern", "camping lantern", 6, 340, (110, 110, 190), ("aluminium", "polycarbonate"), 45.00),
    ("p08", "Gale Travel Kettle", "travel kettle", None, 780, (160, 140, 200), ("stainless steel", "plastic"), 34.90),
    ("p09", "Heron Earbuds", "pair of wireless earbuds", 7, 52, (60, 48, 28), ("plastic", "silicone"), 89.00),
    ("p10", "Ivy Cutting Board", "cutting board", None, 900, (400, 280, 20), ("bamboo",), 27.00),
    ("p11", "Juniper Yoga Mat", "yoga mat", None, 1800, (1830, 610, 5), ("natural rubber",), 58.00),
    ("p12", "Kestrel Bike Light", "bike light", 10, 95, (80, 35, 30), ("aluminium", "silicone"), 32.00),
    ("p13", "Larch Blanket", "wool blanket", None, 1500, (1800, 1300, 5), ("merino wool",), 119.00),
    ("p14", "Moss Plant Pot", "plant pot", None, 650, (160, 160, 150), ("terracotta",), 18.50),
    ("p15", "Nook Bookshelf", "bookshelf", None, 14500, (800, 300, 1100), ("pine",), 149.00),
    ("p16", "Orbit Desk Fan", "rechargeable desk fan", 5, 820, (230, 120, 300), ("plastic", "steel"), 42.00),
    ("p17", "Pebble Power Bank", "power bank", None, 210, (140, 70, 16), ("aluminium",), 39.00),
    ("p18", "Quill Fountain Pen", "fountain pen", None, 28, (140, 13, 13), ("brass", "steel"), 54.00),
    ("p19", "Ridge Backpack", "hiking backpack", None, 1250, (600, 320, 220), ("ripstop nylon",), 99.00),
    ("p20", "Sable Chef's Knife", "chef's knife", None, 210, (330, 48, 20), ("carbon steel", "walnut"), 89.00),
    ("p21", "Tide Toothbrush", "electric toothbrush", 30, 130, (250, 28, 28), ("plastic",), 59.00),
    ("p22", "Umber Mug Set", "set of four mugs", None, 1600, (250, 250, 110), ("stoneware",), 36.00),
    ("p23", "Vale Thermometer", "kitchen thermometer", 40, 60, (150, 40, 20), ("stainless steel", "plastic"), 27.50),
    ("p24", "Willow Picnic Basket", "picnic basket", None, 2100, (450, 320, 250), ("willow", "cotton"), 72.00),
)

#: The products whose description the lesson walks through (the book's battery case).
NARRATIVE_PRODUCTS = ("p07",)
#: Fixed before any judge run: the judge prompt may be tuned on the calibration subset only.
CALIBRATION_SUBSET = ("p01", "p03", "p05", "p06", "p08", "p09", "p11", "p13", "p14", "p16", "p18", "p20", "p21", "p23")
#: Fixed before any judge run: agreement is measured here, and the judge is never tuned on it.
HELD_OUT_SUBSET = ("p02", "p04", "p07", "p10", "p12", "p15", "p17", "p19", "p22", "p24")

#: One opening sentence per product, in the shop's plain voice.
OPENERS = {
    "p01": "A quiet, warm light for long evenings at the desk.",
    "p02": "Cold water on the trail, hot tea at the office.",
    "p03": "A heavy pan that sears evenly and lasts for decades.",
    "p05": "Warm hands on a cold morning commute.",
    "p06": "A light shell for wet days in town and on the hills.",
    "p07": "A steady light for the tent and the picnic table.",
    "p08": "Boil water for tea wherever you stay the night.",
    "p09": "Small earbuds for music on the move.",
    "p10": "A firm, knife-friendly board for everyday chopping.",
    "p11": "A grippy mat for daily practice at home.",
    "p12": "A bright rear light for dark commutes.",
    "p13": "A soft, warm throw for the sofa or the bed.",
    "p15": "Open shelving for books, plants and records.",
    "p16": "A quiet breeze on a hot afternoon at the desk.",
    "p17": "Spare power for a phone on a long day out.",
    "p18": "A pen with a smooth nib for daily writing.",
    "p20": "A sharp, balanced blade for everyday kitchen work.",
    "p21": "A gentle clean twice a day.",
    "p22": "Four sturdy mugs for coffee at home.",
    "p23": "Check the roast without opening the oven.",
    "p14": "A simple pot for a kitchen herb or a fern.",
    "p24": "Everything for a picnic in one basket.",
}
PUSHY = {
    "p04": "The BEST speaker EVER made!!! Don't miss out, buy it now before it's gone!!!",
    "p19": "Stop settling for less!!! This is the ONLY backpack you will ever need, grab yours today!!!",
}
BORDERLINE = {  # hype the raters split on
    "p02": "Honestly the last bottle you will ever want!",
    "p09": "You are going to love these!",
    "p16": "Simply the coolest fan around!",
    "p22": "Your mornings will never be the same!",
}


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _body(
    row: tuple[Any, ...], *, battery: str | None = None, materials: str | None = None, drop: tuple[str, ...] = ()
) -> str:
    pid, name, category, hours, grams, (length, width, height), mats, _euros = row
    parts = [PUSHY.get(pid) or OPENERS[pid]]
    if "materials" not in drop:
        parts.append(f"The {name} is {_article(category)} {category} made of {materials or ' and '.join(mats)}.")
    else:
        parts.append(f"The {name} is {_article(category)} {category} for everyday use.")
    if "weight" not in drop:
        parts.append(f"It weighs {grams:g} g and measures {length} x {width} x {height} mm.")
    if hours is not None and "battery" not in drop:
        parts.append(f"One charge lasts {battery or f'{hours:g} hours'}.")
    if pid in BORDERLINE:
        parts.append(BORDERLINE[pid])
    return " ".join(parts)


def labeled_description(product_id: str) -> str:
    """Return the exact reply text (JSON, or not) of the description the raters labeled for a product."""
    row = next(r for r in PRODUCT_ROWS if r[0] == product_id)
    name = row[1]
    if product_id == "p07":  # the book's case: the facts say 6 hours
        body = _body(row, battery="12 hours")
    elif product_id == "p03":
        body = _body(row).replace("2300 g", "1.2 kg")
    elif product_id == "p12":
        body = _body(row) + " It is fully waterproof, so rain is never a worry."
    elif product_id == "p15":
        body = _body(row, materials="solid oak")
    elif product_id in ("p05", "p10", "p18", "p21"):
        body = _body(row, drop=("materials",))
    elif product_id in ("p14", "p24"):
        body = f"The {name}, {_article(row[2])} {row[2]} for your home."
    elif product_id == "p20":
        body = _body(row) + (
            " Every cook deserves a knife that feels right in the hand, and this one has been shaped with care so"
            " that it rests comfortably through long sessions of slicing, dicing and mincing. Wash it by hand, dry"
            " it at once, and hone the edge now and then, and it will keep its bite for many years of dinners with"
            " family and friends."
        )
    elif product_id == "p23":
        return f"{name}: {_body(row)}"  # plain text, not the JSON object asked for
    else:
        body = _body(row)
    return json.dumps({"title": name, "description": body}, ensure_ascii=False)


#: The adjudicated label per (product, criterion) where it is not the passing one; every other pair passes.
ADJUDICATED_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("p03", "factual_accuracy"): "fail",
    ("p07", "factual_accuracy"): "fail",
    ("p12", "factual_accuracy"): "fail",
    ("p15", "factual_accuracy"): "fail",
    ("p05", "completeness"): "partial",
    ("p10", "completeness"): "partial",
    ("p18", "completeness"): "partial",
    ("p21", "completeness"): "partial",
    ("p14", "completeness"): "incomplete",
    ("p24", "completeness"): "incomplete",
    ("p04", "tone"): "fail",
    ("p19", "tone"): "fail",
    ("p09", "tone"): "fail",
    ("p14", "format_length"): "fail",
    ("p24", "format_length"): "fail",
    ("p20", "format_length"): "fail",
    ("p23", "format_length"): "fail",
}
#: Where a rater's own label differs from the adjudicated one (the raters then discussed it).
RATER_DEVIATIONS: dict[str, dict[tuple[str, str], str]] = {
    "rater_a": {("p16", "tone"): "fail", ("p21", "completeness"): "complete", ("p22", "tone"): "fail"},
    "rater_b": {
        ("p02", "tone"): "fail",
        ("p09", "tone"): "pass",
        ("p15", "factual_accuracy"): "pass",
        ("p10", "completeness"): "complete",
        ("p16", "tone"): "fail",
    },
}
PASSING = {"factual_accuracy": "pass", "completeness": "complete", "tone": "pass", "format_length": "pass"}


def adjudicated_label(product_id: str, criterion: str) -> str:
    """Return the label the two raters settled on for one product and criterion."""
    return ADJUDICATED_EXCEPTIONS.get((product_id, criterion), PASSING[criterion])


def rater_label(rater: str, product_id: str, criterion: str) -> str:
    """Return one rater's own label, before adjudication."""
    return RATER_DEVIATIONS[rater].get((product_id, criterion), adjudicated_label(product_id, criterion))
