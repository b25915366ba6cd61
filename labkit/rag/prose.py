"""The running text of the fictional filings: seeded paragraphs that fill each page to a real report's density.

A real annual report's page holds 2,500 to 4,000 characters, most of it prose around a table or two, and its
risk factors and accounting discussions use the words of the line items (revenue, net income, capital
expenditures, long-term debt, the effective tax rate) in sentences that state no figure. Those sentences are
what makes retrieval hard: they look like the question without answering it. `fill` draws such paragraphs
from per-section banks with a seeded generator, so the same seed always gives the same text.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

#: Sentences per section kind; ``{placeholders}`` are filled from the company's words (see `fill`).
BANKS: dict[str, tuple[str, ...]] = {
    "forward": (
        "This report contains forward-looking statements about our revenue, margins, cash flows, capital "
        "expenditures and dividends, which are subject to risks and uncertainties.",
        "Words such as expect, anticipate, intend, plan, believe, estimate and outlook identify forward-looking "
        "statements; they are not guarantees of future revenue, net income or earnings per share.",
        "Actual results could differ materially because of demand for {products}, input costs, interest rates, "
        "labor availability and the other matters described under Item 1A.",
        "We undertake no obligation to update any forward-looking statement, whether as a result of new "
        "information, future events or otherwise, except as required by law.",
        "Investors should not place undue reliance on forward-looking statements, which speak only as of the date "
        "of this report and reflect management's current expectations for fiscal {next}.",
        "Our reports on Forms 10-K, 10-Q and 8-K, and amendments to them, are available free of charge on our "
        "investor relations website as soon as practicable after we file them.",
        "The information on our website is not part of this report and is not incorporated into it by reference.",
        "Certain amounts in prior-year financial statements have been reclassified to conform to the current "
        "presentation; the reclassifications did not change net income or shareholders' equity.",
    ),
    "letter": (
        "Our teams in {city} and across our network kept service levels high while demand shifted between "
        "segments during the year.",
        "We measure ourselves on organic revenue growth, operating margin and the conversion of net income into "
        "free cash flow, and we report all three to the board each quarter.",
        "The {seg0} business continued to win new accounts, while {seg2} focused on pricing discipline rather "
        "than volume.",
        "We kept our capital allocation priorities unchanged: invest in the business first, then pay a growing "
        "dividend, and return excess cash through share repurchases.",
        "Safety remains our first operating priority, and our recordable injury rate improved again this year.",
        "We simplified our product lines and closed two smaller sites, which will lower our cost of revenue over "
        "time and make each segment easier to run.",
        "Looking ahead to fiscal {next}, we will keep investing in {products} and in the systems that support our "
        "customers, while holding our cost structure steady.",
        "I am grateful to our customers, suppliers and shareholders for their confidence, and to the board for "
        "its guidance during the year.",
        "Our balance sheet gives us room to act: leverage is moderate, our revolving credit facility is undrawn "
        "and our debt maturities are well spread.",
    ),
    "business": (
        "We sell {products} to customers through direct sales teams, distributors and online channels.",
        "Our largest customers are national accounts and regional distributors; no single customer accounted for "
        "more than 10% of revenue in any of the last three fiscal years.",
        "Competition is based on price, reliability, breadth of offering and service; our competitors range from "
        "global companies to regional specialists.",
        "Demand is moderately seasonal: revenue is usually highest in the third and fourth quarters, and working "
        "capital builds ahead of those quarters.",
        "We buy steel, aluminum, packaging, fuel and electronic components from several suppliers and have not "
        "experienced significant shortages, although prices vary with commodity markets.",
        "Our brands, patents and trademarks are important to the business as a whole, but no single one is "
        "material to any segment.",
        "Backlog is not a meaningful indicator of future revenue because most orders are filled within weeks of "
        "being received.",
        "We are subject to environmental, health and safety regulations; compliance costs were not material to "
        "our capital expenditures, earnings or competitive position.",
        "Each segment has its own general manager, who reports to the chief executive officer and is responsible "
        "for the segment's revenue and operating income.",
        "We manage the {seg1} business for cash: it grows more slowly than the company as a whole but needs little "
        "capital.",
    ),
    "people": (
        "We invest in training, with every new hire completing a structured onboarding program in the first "
        "ninety days.",
        "Our voluntary turnover rate was lower than in the prior year, and we filled most supervisory roles from "
        "within.",
        "About a fifth of our hourly employees are covered by collective bargaining agreements, none of which "
        "expires in the next twelve months.",
        "We offer competitive pay, health benefits, a retirement savings plan with a company match, and an "
        "employee stock purchase plan.",
        "The board's compensation committee reviews our human capital measures, including safety, retention and "
        "the diversity of our workforce, at least once a year.",
        "Employee engagement surveys are run twice a year, and each site's leadership reviews the results with "
        "its teams.",
        "Headcount changes during the year reflected the closure of smaller sites and hiring in the {seg0} segment.",
    ),
    "risk": (),
    "legal": (
        "From time to time we are party to lawsuits and claims arising in the ordinary course of business, "
        "including product liability, employment and commercial disputes.",
        "We do not believe that any pending matter, individually or in aggregate, will have a material effect on "
        "our financial position, results of operations or cash flows.",
        "We record a liability when a loss is probable and can be reasonably estimated, and we disclose matters "
        "where a loss is reasonably possible.",
        "Item 4, mine safety disclosures, is not applicable to the company.",
        "Our principal facilities are owned; some warehouses and sales offices are leased under operating leases.",
        "We believe our facilities are suitable and adequate for our current operations and have capacity for "
        "the growth we expect.",
        "Item 1B, unresolved staff comments: none.",
        "Item 1C, cybersecurity: our information security program is overseen by the audit committee and led by "
        "our chief information security officer.",
    ),
    "equity": (
        "Our common stock trades on the New York Stock Exchange; there were about {holders} holders of record at "
        "the end of the year.",
        "The declaration and amount of future dividends are at the discretion of the board and depend on our "
        "earnings, cash flows, financial condition and other factors.",
        "Share repurchases are made under a program authorized by the board, in the open market or in privately "
        "negotiated transactions, and may be suspended at any time.",
        "The performance graph compares the cumulative total return of our common stock with a broad market index "
        "and an industry index over five years.",
        "No equity securities were sold during the year that were not registered under the Securities Act.",
        "Shares withheld to satisfy tax withholding on vested stock awards are not counted against the "
        "repurchase authorization.",
    ),
    "mdna": (
        "Management's discussion should be read together with the consolidated financial statements and notes.",
        "We use non-GAAP measures such as organic revenue growth and free cash flow as supplements to, not "
        "substitutes for, measures prepared under US generally accepted accounting principles.",
        "Price increases contributed to revenue growth in most segments, partly offset by lower volumes in "
        "categories where customers traded down.",
        "Cost of revenue reflected higher wages and freight, partly offset by productivity programs and lower "
        "commodity prices in the second half.",
        "Selling, general and administrative expense rose with investment in sales coverage and information "
        "systems, but declined slightly as a share of revenue.",
        "Foreign currency movements had a small negative effect on reported revenue and operating income.",
        "Interest expense declined as we repaid part of our term loan on schedule.",
        "The change in other income reflects foreign exchange gains and losses and income from short-term investments.",
        "Operating margin is operating income divided by revenue; management uses it to compare segments and periods.",
        "Gross margin is gross profit divided by revenue and is influenced by mix, pricing and input costs.",
        "Results of the {seg1} segment depend on large customers' purchasing cycles, which can shift revenue "
        "between quarters.",
        "We evaluate segment performance on segment revenue and segment operating income, which exclude "
        "corporate expenses and restructuring charges.",
    ),
    "capital": (
        "Our primary sources of liquidity are cash from operations, cash on hand and our revolving credit "
        "facility; our primary uses are capital expenditures, dividends, share repurchases and debt service.",
        "The revolving credit facility provides up to {facility} million of borrowing capacity and matures in "
        "{year_plus5}; it was undrawn throughout the year.",
        "Our credit agreements contain customary covenants, including a maximum leverage ratio, with which we "
        "were in compliance at year end.",
        "We expect capital expenditures next year to be in line with depreciation as we maintain plants, fleets "
        "and systems.",
        "Working capital needs are seasonal and are funded from operating cash flow.",
        "Cash held outside the United States is available for use in our international operations and could be "
        "repatriated with little additional tax.",
        "We have no off-balance-sheet arrangements other than the operating leases and purchase obligations "
        "described in the notes.",
        "Contractual obligations include debt maturities, interest, lease payments and purchase commitments "
        "for raw materials and services.",
        "Our credit ratings were unchanged during the year and remain investment grade.",
    ),
    "estimates": (
        "Preparing financial statements requires estimates and assumptions that affect reported amounts of "
        "assets, liabilities, revenue and expenses; actual results may differ.",
        "Goodwill is tested for impairment each year in the fourth quarter, or sooner if events suggest the "
        "carrying amount of a reporting unit may not be recoverable.",
        "The fair value of each reporting unit exceeded its carrying amount by a substantial margin in the most "
        "recent test; a one-point change in the discount rate would not have led to an impairment.",
        "Revenue from service contracts is recognized over the contract period, and variable consideration such "
        "as rebates is estimated using expected values.",
        "Inventories are stated at the lower of cost and net realizable value; reserves for excess and obsolete "
        "items are based on historical usage and forecasts.",
        "Income tax accruals require judgment about the timing and deductibility of items; uncertain tax "
        "positions are recognized only when they are more likely than not to be sustained.",
        "Self-insured liabilities for workers' compensation, auto liability and health claims are estimated with "
        "the help of actuaries.",
        "Pension obligations are not material because our defined benefit plans were frozen and largely settled "
        "in earlier years.",
    ),
    "market": (
        "We are exposed to changes in interest rates, foreign currency exchange rates and commodity prices.",
        "Most of our long-term debt bears fixed rates; the term loan bears a floating rate, so a one-point rise "
        "in rates would raise annual interest expense by a few million dollars.",
        "Revenue and costs outside the United States are mostly in euros, Canadian dollars and Mexican pesos; a "
        "10% stronger dollar would lower reported revenue and operating income modestly.",
        "We use forward contracts to hedge some currency exposures and fixed-price purchase agreements for some "
        "commodities; we do not use derivatives for trading.",
        "The fair value of our fixed-rate senior notes moves with market rates but does not affect net income "
        "unless we retire the notes before maturity.",
        "Commodity price changes usually reach our cost of revenue with a lag of one to two quarters.",
    ),
    "statement": (
        "The accompanying notes are an integral part of these consolidated financial statements.",
        "Amounts are in millions of US dollars, except per-share amounts, and may not add because of rounding.",
        "Prior-period amounts reflect the current presentation of segment and corporate costs.",
        "See Note 3 for revenue and operating income by segment, and Note 6 for the components of the provision "
        "for income taxes.",
        "Per-share amounts are computed independently for each period presented.",
        "Stock-based compensation is included in selling, general and administrative expense.",
        "Depreciation is computed on a straight-line basis over the estimated useful lives of the assets.",
        "The consolidated statements include the accounts of the company and its wholly owned subsidiaries; "
        "intercompany balances are eliminated.",
    ),
    "notes": (
        "Cash equivalents are highly liquid investments with maturities of three months or less when purchased.",
        "Accounts receivable are recorded net of an allowance for expected credit losses, estimated from aging "
        "and customer credit quality.",
        "Property, plant and equipment is recorded at cost less accumulated depreciation; buildings are "
        "depreciated over up to forty years and equipment over three to fifteen years.",
        "Research and development costs are expensed as incurred.",
        "Shipping and handling costs billed to customers are included in revenue, and the related costs in cost "
        "of revenue.",
        "Recently issued accounting standards are not expected to have a material effect on our financial statements.",
        "Contract liabilities for service agreements paid in advance are recognized as revenue as the services "
        "are performed.",
        "We have no customer that accounts for more than 10% of consolidated revenue.",
    ),
    "audit": (
        "These financial statements are the responsibility of the company's management; our responsibility is to "
        "express an opinion on them based on our audits.",
        "We conducted our audits in accordance with the standards of the Public Company Accounting Oversight "
        "Board, which require that we plan and perform the audit to obtain reasonable assurance.",
        "Critical audit matters are matters communicated to the audit committee that relate to accounts that are "
        "material and involved especially challenging auditor judgment.",
        "We also audited, in accordance with the same standards, the company's internal control over financial "
        "reporting, and expressed an unqualified opinion on it.",
        "Management assessed the effectiveness of internal control over financial reporting using the criteria "
        "of the COSO framework and concluded that it was effective.",
        "There were no changes in internal control during the fourth quarter that materially affected, or are "
        "reasonably likely to affect, internal control over financial reporting.",
        "Disclosure controls and procedures were effective as of the end of the period covered by this report.",
    ),
    "proxy": (
        "The information required by Item 10 about directors, executive officers and corporate governance is "
        "incorporated by reference from our definitive proxy statement.",
        "The information required by Item 11, executive compensation, including the compensation of our chief "
        "executive officer, is incorporated by reference from the proxy statement.",
        "The information required by Items 12, 13 and 14 about security ownership, related transactions and "
        "accountant fees is incorporated by reference from the proxy statement.",
        "We have adopted a code of conduct that applies to all employees, officers and directors, and we post "
        "any amendment or waiver on our website.",
        "The exhibits listed in the exhibit index are filed or furnished as part of this report.",
        "Pursuant to the requirements of the Securities Exchange Act of 1934, the registrant has duly caused this "
        "report to be signed on its behalf by the undersigned, thereunto duly authorized.",
    ),
}

#: Risk factors are built from parts, as real ones read: a cause, the line items it touches, and a consequence.
RISK_CAUSES = (
    "a slowdown in industrial production",
    "higher interest rates",
    "a prolonged disruption at one of our larger facilities",
    "the loss of a large customer or distributor",
    "increases in the cost of steel, fuel, packaging or labor",
    "a cyberattack on our order and billing systems",
    "changes in tax law in the United States or abroad",
    "a failure to integrate an acquired business",
    "a strengthening of the US dollar",
    "a shortage of qualified drivers, technicians or plant workers",
    "new environmental or product safety regulations",
    "a downgrade of our credit ratings",
    "weather events that close plants or roads",
    "price competition from lower-cost rivals",
)
RISK_EFFECTS = (
    "could reduce our revenue and operating income",
    "could lower our gross margin and net income",
    "could increase our capital expenditures beyond our plans",
    "could raise our effective tax rate and reduce diluted earnings per share",
    "could increase our interest expense and make it harder to refinance long-term debt",
    "could reduce cash provided by operating activities",
    "could require us to record an impairment of goodwill",
    "could limit our ability to pay dividends or repurchase shares",
    "could reduce revenue in one or more of our segments",
    "could increase the number of employees we need, or make it harder to retain them",
)
RISK_TAILS = (
    "We cannot predict how long such conditions would last.",
    "Our insurance may not cover all of the resulting losses.",
    "Any of these events could also affect the price of our common stock.",
    "Past results are therefore not a reliable guide to future revenue or earnings.",
    "We may not be able to pass higher costs on to customers quickly enough.",
    "Such effects could be larger in {seg1} than in our other segments.",
    "These risks are heightened in periods of economic uncertainty.",
)


def risk_paragraph(rng: random.Random, words: Mapping[str, object]) -> str:
    """Return one risk factor: a bold-style heading sentence, a cause and its effect on line items, and a tail."""
    cause, effect = rng.choice(RISK_CAUSES), rng.choice(RISK_EFFECTS)
    other = rng.choice([c for c in RISK_CAUSES if c != cause])
    tail = rng.choice(RISK_TAILS).format(**words)
    return (
        f"{cause[0].upper()}{cause[1:]} {effect}. For example, {other} {rng.choice(RISK_EFFECTS)}, and "
        f"{cause} would affect {words['short']}'s results in every segment to some degree. {tail}"
    )


def fill(
    bank: str, rng: random.Random, words: Mapping[str, object], *, chars: int, used: set[str] | None = None
) -> list[str]:
    """Return paragraphs from ``bank`` (3 or 4 sentences each) whose total length reaches at least ``chars``.

    ``used`` holds sentences already printed in this filing: they are taken again only when the bank runs out,
    so one filing repeats itself as little as the bank allows.
    """
    if chars <= 0:
        return []
    if bank == "risk":
        paragraphs: list[str] = []
        while sum(len(p) + 1 for p in paragraphs) < chars:
            paragraphs.append(risk_paragraph(rng, words))
        return paragraphs
    used = used if used is not None else set()
    sentences = [s.format(**words) for s in BANKS[bank]]
    fresh = [s for s in sentences if s not in used]
    rng.shuffle(fresh)
    stale = [s for s in sentences if s in used]
    rng.shuffle(stale)
    queue = fresh + stale
    paragraphs, total = [], 0
    while total < chars and queue:
        size = rng.choice((3, 4))
        take, queue = queue[:size], queue[size:]
        used.update(take)
        paragraphs.append(" ".join(take))
        total += len(paragraphs[-1]) + 1
    return paragraphs
