"""The synthetic support dataset of lesson 04: labelled requests in the Bitext schema, written by templates.

Every row has the five Bitext fields (``flags``, ``instruction``, ``category``,
``intent``, ``response``) and covers Bitext's 27 intents in 11 categories. The
texts come from templates written for the course, varied deterministically
(politeness, colloquial register, typos, keyword style, questions) and keep
Bitext's ``{{Order Number}}``-style placeholders. No row describes a real
customer. Each scope is one file; a row's id is its position in that file.

Run ``python -m labkit.agent.dataset [FOLDER]`` to (re)write the fixtures; the
files come out byte-identical every time.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.canonical import load_strict
from labkit.errors import LabkitError
from labkit.paths import fixtures_dir

DATASET_VERSION = "support-2026-09-01"
#: The scope an ordinary analyst may read; it holds exactly 27 ``get_refund`` rows, as in the book's trace.
APPROVED_SCOPE = "approved_support_dataset"
#: A scope of escalated cases that an ordinary analyst may not read.
RESTRICTED_SCOPE = "escalations_restricted"
SCOPES = (APPROVED_SCOPE, RESTRICTED_SCOPE)

#: Bitext's 27 intents, by category.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "ACCOUNT": (
        "create_account",
        "delete_account",
        "edit_account",
        "recover_password",
        "registration_problems",
        "switch_account",
    ),
    "CANCEL": ("check_cancellation_fee",),
    "CONTACT": ("contact_customer_service", "contact_human_agent"),
    "DELIVERY": ("delivery_options", "delivery_period"),
    "FEEDBACK": ("complaint", "review"),
    "INVOICE": ("check_invoice", "get_invoice"),
    "ORDER": ("cancel_order", "change_order", "place_order", "track_order"),
    "PAYMENT": ("check_payment_methods", "payment_issue"),
    "REFUND": ("check_refund_policy", "get_refund", "track_refund"),
    "SHIPPING": ("change_shipping_address", "set_up_shipping_address"),
    "SUBSCRIPTION": ("newsletter_subscription",),
}
INTENTS: tuple[str, ...] = tuple(sorted(i for group in CATEGORIES.values() for i in group))
CATEGORY_OF: dict[str, str] = {i: c for c, group in CATEGORIES.items() for i in group}
Intent = Literal[INTENTS]  # type: ignore[valid-type]

# Instruction templates per intent (the request a customer writes), then one response template.
_T: dict[str, tuple[tuple[str, ...], str]] = {
    "create_account": (
        ("I want to open an account", "how do I sign up for a new account", "create an account for me"),
        "I can help you create an account: choose Sign up on {{Website URL}} and follow the steps.",
    ),
    "delete_account": (
        ("I want to close my account", "delete my {{Account Type}} account", "how can I remove my profile"),
        "I'm sorry to see you go. Open {{Account Settings}} and choose Close account to delete it.",
    ),
    "edit_account": (
        ("I need to update my account details", "change the email on my profile", "edit my personal info"),
        "You can edit your details under {{Account Settings}}; changes apply at once.",
    ),
    "recover_password": (
        ("I forgot my password", "can't log in, reset my password", "help me recover my password"),
        "Use Forgot password on the sign-in page and we will email a reset link to {{Email Address}}.",
    ),
    "registration_problems": (
        ("the sign up form gives an error", "I can't finish registering", "registration keeps failing"),
        "Sorry about the trouble registering. Tell me the error you see and I will look into it.",
    ),
    "switch_account": (
        ("switch to my other account", "how do I change to my {{Account Type}} account", "swap user profiles"),
        "To switch accounts, sign out and sign in again with the other account's email.",
    ),
    "check_cancellation_fee": (
        ("is there a fee to cancel", "what does cancelling cost", "tell me about the cancellation charge"),
        "The cancellation fee depends on your plan; see {{Cancellation Policy}} for the amounts.",
    ),
    "contact_customer_service": (
        ("how do I reach customer service", "what are your support hours", "contact support please"),
        "Customer service is open {{Customer Support Hours}} at {{Customer Support Phone Number}}.",
    ),
    "contact_human_agent": (
        ("let me talk to a real person", "I need a human agent", "connect me with an agent"),
        "I'll transfer you to a human agent now; please stay on the line.",
    ),
    "delivery_options": (
        ("what shipping methods do you offer", "which delivery options are there", "can I get express delivery"),
        "We offer standard, express and pick-up delivery; the options show at checkout.",
    ),
    "delivery_period": (
        ("when will order {{Order Number}} arrive", "how long does delivery take", "what's the delivery time"),
        "Standard delivery takes {{Delivery Time}}; tracking shows the expected date.",
    ),
    "complaint": (
        ("I want to file a complaint", "your service was terrible", "I'm unhappy with how my case was handled"),
        "I'm sorry about your experience. I have logged your complaint and a specialist will follow up.",
    ),
    "review": (
        ("I'd like to leave a review", "where can I rate my purchase", "I want to give feedback on the product"),
        "Thank you! You can leave a review from the order page of {{Order Number}}.",
    ),
    "check_invoice": (
        ("show me invoice {{Invoice Number}}", "I want to see my bill", "check the invoice for my last order"),
        "You can view invoice {{Invoice Number}} under Orders > Invoices.",
    ),
    "get_invoice": (
        ("send me a copy of my invoice", "I need the invoice for order {{Order Number}}", "download my invoice"),
        "I've sent the invoice for {{Order Number}} to your email address.",
    ),
    "cancel_order": (
        ("cancel order {{Order Number}}", "I don't want my order anymore", "how do I cancel my purchase"),
        "I can cancel order {{Order Number}} if it has not shipped yet; please confirm.",
    ),
    "change_order": (
        ("change the items in order {{Order Number}}", "I need to modify my order", "add a product to my order"),
        "Order {{Order Number}} can be changed until it ships; tell me what to change.",
    ),
    "place_order": (
        ("I want to buy {{Product}}", "help me place an order", "how do I order online"),
        "Add the items to your cart and choose Checkout to place the order.",
    ),
    "track_order": (
        ("where is my order {{Order Number}}", "track my package", "what's the status of my order"),
        "Order {{Order Number}} is on its way; the tracking link is in your confirmation email.",
    ),
    "check_payment_methods": (
        ("which payment methods do you accept", "can I pay with PayPal", "list the ways to pay"),
        "We accept cards, bank transfer and PayPal; see {{Payment Methods}} for details.",
    ),
    "payment_issue": (
        ("my payment was declined", "I was charged twice", "there's a problem with my payment"),
        "Sorry about the payment problem. I will check the charge on {{Order Number}} for you.",
    ),
    "check_refund_policy": (
        ("what is your refund policy", "can I get my money back after 30 days", "tell me the refund rules"),
        "Our refund policy is at {{Refund Policy URL}}; most items qualify within {{Refund Period}}.",
    ),
    "get_refund": (
        (
            "I want a refund for order {{Order Number}}",
            "give me my money back",
            "how do I request a refund",
            "refund the amount I paid for {{Product}}",
            "I need a reimbursement for my purchase",
        ),
        "I'm sorry the purchase did not work out. I have opened a refund request for {{Order Number}}.",
    ),
    "track_refund": (
        ("where is my refund", "check the status of my refund", "has my reimbursement been processed"),
        "Your refund for {{Order Number}} is being processed and should arrive within {{Refund Period}}.",
    ),
    "change_shipping_address": (
        ("change my delivery address", "update the shipping address on {{Order Number}}", "ship it somewhere else"),
        "I can change the shipping address on {{Order Number}} before it ships; what is the new one?",
    ),
    "set_up_shipping_address": (
        ("add a shipping address", "set up a new delivery address", "save my address for shipping"),
        "Add a shipping address under {{Account Settings}} > Addresses.",
    ),
    "newsletter_subscription": (
        ("sign me up for the newsletter", "unsubscribe me from your emails", "I want the newsletter"),
        "Done: your newsletter preferences for {{Email Address}} are updated.",
    ),
}

#: Rows per intent in the approved scope: 27 get_refund rows, the others vary from 6 to 14.
APPROVED_COUNTS = {intent: 27 if intent == "get_refund" else 6 + (n * 5) % 9 for n, intent in enumerate(INTENTS)}
#: Rows per intent in the restricted scope: only escalation-prone intents.
RESTRICTED_COUNTS = {"complaint": 9, "contact_human_agent": 6, "get_refund": 11, "payment_issue": 7}


class SupportRow(BaseModel):
    """One labelled support request, in the Bitext schema."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    flags: str = Field(
        pattern=r"^[BCIKLMNPQWZ]+$", description="Bitext variation flags (e.g. P polite, Q colloquial, Z typos)."
    )
    instruction: str = Field(min_length=3, description="What the customer wrote.")
    category: str = Field(description="One of Bitext's 11 categories.")
    intent: str = Field(description="One of Bitext's 27 intents.")
    response: str = Field(min_length=3, description="An example agent reply.")


class DatasetError(LabkitError, ValueError):
    """A support dataset file is malformed, mislabelled or of another version."""


#: What each Bitext flag the course's rows carry says about an instruction's wording (`_vary` sets them).
FLAG_MEANINGS = {
    "B": "basic wording",
    "I": "a question",
    "K": "keywords only",
    "P": "polite",
    "Q": "colloquial",
    "Z": "typos",
}


def _typo(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    candidates = [n for n, w in enumerate(words) if len(w) > 4 and "{" not in w and "}" not in w]
    if not candidates:
        return text
    n = rng.choice(candidates)
    w = words[n]
    k = rng.randrange(1, len(w) - 2)
    words[n] = w[:k] + w[k + 1] + w[k] + w[k + 2 :]
    return " ".join(words)


def _vary(text: str, rng: random.Random) -> tuple[str, str]:
    """Return one variant of an instruction and its Bitext flags."""
    flags = {"B"}
    style = rng.randrange(6)
    if style == 1:
        text, flags = f"could you please help me: {text}", flags | {"P"}
    elif style == 2:
        text, flags = f"hey, {text} lol", flags | {"Q"}
    elif style == 3:
        text, flags = f"{text}?" if not text.endswith("?") else text, flags | {"I"}
    elif style == 4:
        text, flags = " ".join(w for w in text.split() if len(w) > 3 or "{" in w), {"K"}
    if rng.random() < 0.3:
        text, flags = _typo(text, rng), flags | {"Z"}
    return text, "".join(sorted(flags))


def build_rows(counts: dict[str, int], *, seed: int) -> list[dict[str, str]]:
    """Return the rows of one scope: ``counts[intent]`` varied requests per intent, in a seeded shuffled order."""
    rng = random.Random(seed)
    rows = []
    for intent in INTENTS:
        templates, response = _T[intent]
        for n in range(counts.get(intent, 0)):
            instruction, flags = _vary(templates[n % len(templates)], rng)
            rows.append(
                {
                    "flags": flags,
                    "instruction": instruction,
                    "category": CATEGORY_OF[intent],
                    "intent": intent,
                    "response": response,
                }
            )
    rng.shuffle(rows)
    return rows


def scope_document(scope: str) -> dict[str, Any]:
    """Return the file content of one scope: version, scope name and rows."""
    counts, seed = (APPROVED_COUNTS, 2026) if scope == APPROVED_SCOPE else (RESTRICTED_COUNTS, 901)
    return {"dataset_version": DATASET_VERSION, "scope": scope, "rows": build_rows(counts, seed=seed)}


#: Who may read which scope and use which tools; the application reads this, never the model.
CALLERS = {
    "dataset_version": DATASET_VERSION,
    "callers": {
        "analyst-ana": {"scopes": [APPROVED_SCOPE], "tools": ["filter_by_intent", "count_rows", "summarize_requests"]},
        "lead-lee": {
            "scopes": [APPROVED_SCOPE, RESTRICTED_SCOPE],
            "tools": ["filter_by_intent", "count_rows", "summarize_requests", "export_rows"],
        },
        "visitor-vic": {"scopes": [], "tools": []},
    },
}


def support_dir() -> Path:
    """Return the committed folder of lesson 04's dataset files."""
    return fixtures_dir() / "support"


def write_support_fixtures(folder: str | Path | None = None) -> dict[str, str]:
    """Write every scope file and the callers file into ``folder``; return name -> sha256 of what was written."""
    from labkit.fixtures import prepare_fixture_folder, write_json_fixtures

    folder = prepare_fixture_folder(folder if folder else support_dir())
    contents: dict[str, Any] = {f"{scope}.json": scope_document(scope) for scope in SCOPES}
    contents["callers.json"] = CALLERS
    return write_json_fixtures(folder, contents)


def load_scope(scope: str, *, folder: Path | None = None) -> tuple[list[SupportRow], str]:
    """Load one scope's rows and dataset version, refusing a malformed or mislabelled file."""
    path = (folder or support_dir()) / f"{scope}.json"
    if scope not in SCOPES or not path.is_file():
        raise DatasetError(
            f"no dataset file for scope {scope!r}; known scopes: {', '.join(SCOPES)}. "
            "Run `python -m labkit.agent.dataset` to write them."
        )
    data, _ = load_strict(path, max_bytes=5_000_000)
    if not isinstance(data, dict) or set(data) != {"dataset_version", "scope", "rows"}:
        raise DatasetError(f"{path}: expected an object with dataset_version, scope and rows; regenerate the file")
    if data["scope"] != scope:
        raise DatasetError(f"{path}: the file says scope {data['scope']!r}, not {scope!r}; regenerate the file")
    rows = []
    for number, item in enumerate(data["rows"] if isinstance(data["rows"], list) else [None]):
        try:
            row = SupportRow.model_validate(item)
        except ValidationError as exc:
            raise DatasetError(f"{path}: row {number}: {exc.errors(include_url=False)[0]['msg']}") from None
        if row.intent not in CATEGORY_OF or CATEGORY_OF[row.intent] != row.category:
            raise DatasetError(
                f"{path}: row {number}: intent {row.intent!r} with category {row.category!r} is not Bitext's"
            )
        rows.append(row)
    return rows, data["dataset_version"]


def main(argv: list[str] | None = None) -> int:
    """Write the support fixtures into ``argv[0]`` (default ``fixtures/support``) and print their hashes."""
    from labkit.fixtures import fixture_script

    return fixture_script(argv, prog="labkit.agent.dataset", default=support_dir(), write=write_support_fixtures)


if __name__ == "__main__":
    sys.exit(main())
