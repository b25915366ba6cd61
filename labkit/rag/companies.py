"""The fictional companies of lesson 02 part B and the figures their annual reports print.

Every figure is drawn from a seeded generator and then rounded, and the
statements are built from the rounded parts, so a table always adds up and the
same seed always gives the same reports. The companies, people and figures are
invented for the course; any likeness to a real company is accidental.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

#: Fiscal years with a filing; each filing's statements of income and cash flows print the two years before it.
PERIODS = (2024, 2025)
#: How many fiscal years a filing's multi-year tables print (the filing's year and the ones before it).
YEARS_PRINTED = 3


@dataclass(frozen=True)
class Company:
    """One fictional filer and the words its report uses."""

    ticker: str
    """Short name used in document names (``ACME_2025_10K``)."""
    name: str
    """Legal name printed on the cover."""
    industry: str
    """What the company does, in a phrase."""
    city: str
    """Headquarters city."""
    segments: tuple[str, str, str]
    """The three reporting segments."""
    products: str
    """What the company sells, for the narrative pages."""
    ceo: str
    """Name of the chief executive who signs the letter."""
    auditor: str
    """The (fictional) audit firm."""
    seed: int
    """Seed of the company's figures."""
    base_revenue: float
    """Revenue of the first modelled year, in millions."""


COMPANIES: tuple[Company, ...] = (
    Company(
        "ACME",
        "Acme Industrial Tools, Inc.",
        "a maker of power tools, hand tools and tool repair services",
        "Dayton, Ohio",
        ("Power Tools", "Hand Tools", "Services"),
        "cordless drills, saws, wrench sets and repair contracts",
        "Dana Whitfield",
        "Harrow & Lindqvist LLP",
        11,
        2410.0,
    ),
    Company(
        "BRIGHTWAVE",
        "Brightwave Foods Corporation",
        "a producer of packaged snacks, beverages and frozen meals",
        "Madison, Wisconsin",
        ("Snacks", "Beverages", "Frozen Meals"),
        "crackers, sparkling juices and frozen dinners",
        "Priya Castellanos",
        "Okafor Brandt LLP",
        23,
        5120.0,
    ),
    Company(
        "CORVID",
        "Corvid Freight Systems, Inc.",
        "a freight carrier offering truckload, intermodal and brokerage services",
        "Memphis, Tennessee",
        ("Truckload", "Intermodal", "Brokerage"),
        "long-haul truckload capacity, rail-linked container moves and freight brokerage",
        "Marcus Ellery",
        "Harrow & Lindqvist LLP",
        37,
        1655.0,
    ),
)


def r1(value: float) -> float:
    """Round to one decimal, the precision the statements print (millions)."""
    return round(value + 0.0, 1)


@dataclass
class Year:
    """The figures of one fiscal year (millions of US dollars unless a field says otherwise)."""

    year: int
    revenue: float = 0.0
    cost_of_revenue: float = 0.0
    gross_profit: float = 0.0
    sga: float = 0.0
    rnd: float = 0.0
    operating_income: float = 0.0
    interest_expense: float = 0.0
    other_income: float = 0.0
    pretax_income: float = 0.0
    income_tax: float = 0.0
    net_income: float = 0.0
    diluted_shares: float = 0.0
    diluted_eps: float = 0.0
    segment_revenue: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quarterly_revenue: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    us_revenue: float = 0.0
    cash: float = 0.0
    receivables: float = 0.0
    inventories: float = 0.0
    other_current: float = 0.0
    ppe: float = 0.0
    goodwill: float = 0.0
    other_assets: float = 0.0
    payables: float = 0.0
    accrued: float = 0.0
    current_debt: float = 0.0
    long_term_debt: float = 0.0
    other_liabilities: float = 0.0
    depreciation: float = 0.0
    stock_comp: float = 0.0
    working_capital_change: float = 0.0
    operating_cash_flow: float = 0.0
    capex: float = 0.0
    acquisitions: float = 0.0
    investing_cash_flow: float = 0.0
    debt_repaid: float = 0.0
    dividends: float = 0.0
    buybacks: float = 0.0
    shares_repurchased: float = 0.0
    financing_cash_flow: float = 0.0
    net_change_in_cash: float = 0.0
    employees: int = 0
    facilities: int = 0
    dividend_per_share: float = 0.0
    next_dividend: float = 0.0
    segment_operating_income: tuple[float, float, float] = (0.0, 0.0, 0.0)
    lease_cost: float = 0.0
    state_tax_rate: float = 0.0

    @property
    def total_current_assets(self) -> float:
        """Cash, receivables, inventories and other current assets."""
        return r1(self.cash + self.receivables + self.inventories + self.other_current)

    @property
    def total_assets(self) -> float:
        """Current assets plus property, goodwill and other assets."""
        return r1(self.total_current_assets + self.ppe + self.goodwill + self.other_assets)

    @property
    def total_current_liabilities(self) -> float:
        """Payables, accrued liabilities and the current part of debt."""
        return r1(self.payables + self.accrued + self.current_debt)

    @property
    def total_liabilities(self) -> float:
        """Current liabilities plus long-term debt and other liabilities."""
        return r1(self.total_current_liabilities + self.long_term_debt + self.other_liabilities)

    @property
    def equity(self) -> float:
        """Shareholders' equity: assets less liabilities."""
        return r1(self.total_assets - self.total_liabilities)

    @property
    def effective_tax_rate(self) -> float:
        """Income tax over pretax income, in percent with one decimal."""
        return r1(100 * self.income_tax / self.pretax_income)

    @property
    def total_debt(self) -> float:
        """Current portion plus long-term debt."""
        return r1(self.current_debt + self.long_term_debt)


def company_years(company: Company) -> dict[int, Year]:
    """Return the company's figures for the years its filings print (`YEARS_PRINTED` years up to each period).

    The model starts one year earlier than any filing prints, so every printed year has a full cash flow.
    """
    rng = random.Random(company.seed)
    first = PERIODS[0] - YEARS_PRINTED + 1
    years: dict[int, Year] = {}
    revenue = company.base_revenue
    cash = r1(company.base_revenue * rng.uniform(0.14, 0.2))
    previous: Year | None = None
    debt = r1(company.base_revenue * rng.uniform(0.25, 0.4))
    shares = r1(rng.uniform(60, 180))
    gross_margin, sga_share, rnd_share = rng.uniform(0.28, 0.4), rng.uniform(0.12, 0.17), rng.uniform(0.01, 0.04)
    segment_mix = (rng.uniform(0.25, 0.45), rng.uniform(0.2, 0.35))
    for year in range(first - 1, PERIODS[-1] + 1):
        y = Year(year)
        revenue = revenue * (1 + rng.uniform(-0.03, 0.09)) if previous else revenue
        y.revenue = r1(revenue)
        y.cost_of_revenue = r1(y.revenue * (1 - gross_margin - rng.uniform(-0.01, 0.01)))
        y.gross_profit = r1(y.revenue - y.cost_of_revenue)
        y.sga = r1(y.revenue * sga_share * rng.uniform(0.95, 1.05))
        y.rnd = r1(y.revenue * rnd_share)
        y.operating_income = r1(y.gross_profit - y.sga - y.rnd)
        y.interest_expense = r1(debt * rng.uniform(0.04, 0.055))
        y.other_income = r1(rng.uniform(-4, 9))
        y.pretax_income = r1(y.operating_income - y.interest_expense + y.other_income)
        y.income_tax = r1(y.pretax_income * rng.uniform(0.19, 0.26))
        y.net_income = r1(y.pretax_income - y.income_tax)
        shares = r1(shares * rng.uniform(0.97, 0.995)) if previous else shares
        y.diluted_shares = shares
        y.diluted_eps = round(y.net_income / shares, 2)
        mix = [share * rng.uniform(0.93, 1.07) for share in segment_mix]  # the mix drifts a little each year
        s1, s2 = r1(y.revenue * mix[0]), r1(y.revenue * mix[1])
        y.segment_revenue = (s1, s2, r1(y.revenue - s1 - s2))
        quarters = [r1(y.revenue * q) for q in (0.23, 0.245, 0.255)]
        y.quarterly_revenue = (quarters[0], quarters[1], quarters[2], r1(y.revenue - sum(quarters)))
        y.us_revenue = r1(y.revenue * rng.uniform(0.62, 0.8))
        y.receivables = r1(y.revenue * rng.uniform(0.12, 0.16))
        y.inventories = r1(y.revenue * rng.uniform(0.08, 0.14))
        y.other_current = r1(y.revenue * 0.03)
        y.ppe = r1(y.revenue * rng.uniform(0.3, 0.4))
        y.goodwill = r1(company.base_revenue * 0.18)
        y.other_assets = r1(y.revenue * 0.05)
        y.payables = r1(y.cost_of_revenue * rng.uniform(0.1, 0.14))
        y.accrued = r1(y.revenue * 0.06)
        y.depreciation = r1(y.ppe * rng.uniform(0.09, 0.12))
        y.stock_comp = r1(y.revenue * 0.008)
        y.capex = r1(-y.revenue * rng.uniform(0.035, 0.055))
        y.acquisitions = r1(-rng.choice([0.0, 0.0, y.revenue * 0.03]))
        y.dividend_per_share = round(y.diluted_eps * rng.uniform(0.25, 0.4), 2)
        y.dividends = r1(-shares * y.dividend_per_share)
        y.buybacks = r1(-y.net_income * rng.uniform(0.1, 0.25))
        y.shares_repurchased = r1(-y.buybacks / (y.diluted_eps * rng.uniform(14, 20)))
        y.debt_repaid = r1(-debt * rng.uniform(0.04, 0.08))
        debt = r1(debt + y.debt_repaid)
        y.current_debt = r1(debt * 0.06)
        y.long_term_debt = r1(debt - y.current_debt)
        y.employees = int(round(y.revenue * rng.uniform(3.6, 4.4) / 10) * 10)
        y.facilities = rng.randint(14, 48)
        y.next_dividend = round(y.dividend_per_share / 4 * rng.uniform(1.02, 1.08), 2)
        weights = (0.3 + rng.uniform(0, 0.2), 0.25 + rng.uniform(0, 0.15))
        o1, o2 = r1(y.operating_income * weights[0]), r1(y.operating_income * weights[1])
        y.segment_operating_income = (o1, o2, r1(y.operating_income - o1 - o2))
        y.lease_cost = r1(y.revenue * rng.uniform(0.008, 0.014))
        y.state_tax_rate = r1(rng.uniform(1.5, 3.2))
        if previous is None:
            y.cash = cash
            y.other_liabilities = r1(y.revenue * 0.07)
        else:
            y.working_capital_change = r1(
                -(y.receivables - previous.receivables)
                - (y.inventories - previous.inventories)
                + (y.payables - previous.payables)
            )
            y.operating_cash_flow = r1(y.net_income + y.depreciation + y.stock_comp + y.working_capital_change)
            y.investing_cash_flow = r1(y.capex + y.acquisitions)
            y.financing_cash_flow = r1(y.debt_repaid + y.dividends + y.buybacks)
            y.net_change_in_cash = r1(y.operating_cash_flow + y.investing_cash_flow + y.financing_cash_flow)
            y.cash = r1(previous.cash + y.net_change_in_cash)
            y.other_liabilities = r1(previous.other_liabilities * rng.uniform(0.98, 1.04))
        years[year] = y
        previous = y
    return {year: y for year, y in years.items() if year >= first}
