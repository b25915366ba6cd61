"""An OpenAI-compatible endpoint's limits, and how it is named: the timeouts, the deadline, `redact_url`.

The model boundary (`labkit.boundary`) and the transports under it (`labkit.capture`)
both use these; they live below both so that neither imports the other at load.
"""

from __future__ import annotations

import re

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
