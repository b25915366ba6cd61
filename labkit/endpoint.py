"""An OpenAI-compatible endpoint: read from the environment, its limits (timeouts, deadline), how it is named.

The model boundary (`labkit.boundary`) and the transports under it (`labkit.capture`)
both use these; they live below both so that neither imports the other at load.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlparse

from labkit.errors import LabkitError

#: Seconds to wait for a live endpoint to accept a connection (``LABKIT_CONNECT_TIMEOUT``).
CONNECT_TIMEOUT_S = 5.0
#: Seconds to wait for a live endpoint's reply (``LABKIT_READ_TIMEOUT``).
READ_TIMEOUT_S = 60.0
#: Seconds one attempt may take in all, however the endpoint trickles its reply (``LABKIT_REQUEST_DEADLINE``).
REQUEST_DEADLINE_S = 120.0
#: Attempts after the first when a live call times out or is refused (the openai client's retries).
MAX_RETRIES = 2

#: A URL's scheme and authority (up to the path, query or fragment); its user information ends at the last ``@``.
_URL_AUTHORITY = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<authority>[^/?#\s'\"<>]*)")


def redact_url(text: str) -> str:
    """Return ``text`` with the password of every URL in it shown as ``***``: ``http://user:***@host/v1``.

    A URL with a user name and no password (``https://TOKEN@host``, as tokens are often
    passed) has the user name hidden instead. Every message, log line and saved run that
    names an endpoint goes through this function.
    """

    def hide(match: re.Match[str]) -> str:
        authority = match["authority"]
        if "@" not in authority:
            return match[0]
        userinfo, host = authority.rsplit("@", 1)
        user, colon, _ = userinfo.partition(":")
        return f"{match['scheme']}{user + ':***' if colon else '***'}@{host}"

    return _URL_AUTHORITY.sub(hide, text)


class EndpointUnreachable(LabkitError, ConnectionError):
    """A live endpoint refused the connection or did not answer within the timeouts."""


class BoundaryConfigError(LabkitError, ValueError):
    """The mode or endpoint settings in the environment are missing or invalid."""


def timeout_from_env(name: str, default: float) -> float:
    """Return a timeout in seconds from the environment variable ``name`` (a positive number), else ``default``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise BoundaryConfigError(
            f"{name}={text!r} is not a number of seconds; use a positive number such as {default:g}"
        )
    return value


@dataclass(frozen=True)
class Endpoint:
    """A live OpenAI-compatible endpoint, read from the environment."""

    base_url: str
    api_key: str = field(repr=False)
    model: str

    @property
    def shown_url(self) -> str:
        """The base URL as messages show it: a password in it written ``***``."""
        return redact_url(self.base_url)

    def __repr__(self) -> str:
        return f"Endpoint(base_url={self.shown_url!r}, model={self.model!r})"  # never the key or a password

    @property
    def kind(self) -> str:
        """``local-llama-cpp`` for the bundled server on loopback, else ``openai-compatible``."""
        override = os.environ.get("LABKIT_ENDPOINT_KIND")
        if override:
            return override
        host = urlparse(self.base_url).hostname or ""
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        return "local-llama-cpp" if loopback else "openai-compatible"


def endpoint_from_env() -> Endpoint:
    """Read the live endpoint from ``LABKIT_BASE_URL``, ``LABKIT_API_KEY`` and ``LABKIT_MODEL``."""
    base_url = os.environ.get("LABKIT_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    model = os.environ.get("LABKIT_MODEL")
    if not base_url or not model:
        raise BoundaryConfigError(
            "live and record modes need LABKIT_BASE_URL and LABKIT_MODEL (and LABKIT_API_KEY for a hosted endpoint). "
            "For the bundled local model: run `labkit serve`, then set LABKIT_BASE_URL to the URL it prints and "
            "LABKIT_MODEL=SmolLM2-135M-Instruct."
        )
    key = os.environ.get("LABKIT_API_KEY") or os.environ.get("OPENAI_API_KEY") or "not-needed-for-local"
    return Endpoint(base_url=base_url, api_key=key, model=model)
