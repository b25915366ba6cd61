"""labkit's detect-secrets plugins: token formats that detect-secrets 1.5 has no plugin for.

Each is a `RegexBasedDetector`, written as detect-secrets' built-in plugins are, and
this file imports nothing but ``re`` and detect-secrets, so detect-secrets' own loader
for a custom plugin file takes it as it is: ``detect-secrets scan --plugin
labkit/secret_plugins.py``. `labkit.secret_scan` runs them beside the shipped plugins.
Checked against detect-secrets 1.5's plugins: its GitHub plugin knows ``ghp_``, ``gho_``,
``ghu_``, ``ghs_`` and ``ghr_`` only; its npm plugin only an ``.npmrc`` ``_authToken``
line; its OpenAI plugin only keys that hold ``T3BlbkFJ``; GitLab's ``glpat-`` tokens it finds.
"""

import re

from detect_secrets.plugins.base import RegexBasedDetector


class OpenAIStyleKeyDetector(RegexBasedDetector):
    """Scans for OpenAI-style ``sk-`` keys in every current shape (``sk-proj-``, ``sk-ant-``, ``_`` and ``-``)."""

    secret_type = "OpenAI-style key"
    denylist = (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}"),)


class HuggingFaceTokenDetector(RegexBasedDetector):
    """Scans for Hugging Face access tokens (``hf_`` and 30 or more letters and digits)."""

    secret_type = "Hugging Face token"
    denylist = (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}"),)


class GoogleAPIKeyDetector(RegexBasedDetector):
    """Scans for Google API keys (``AIza`` and 35 characters)."""

    secret_type = "Google API key"
    denylist = (re.compile(r"AIza[0-9A-Za-z_-]{35}"),)


class GitHubFineGrainedTokenDetector(RegexBasedDetector):
    """Scans for GitHub fine-grained personal access tokens (``github_pat_``, 22 characters, ``_``, 59 characters).

    detect-secrets' GitHub plugin knows the ``ghp_``, ``gho_``, ``ghu_``, ``ghs_`` and
    ``ghr_`` prefixes only; fine-grained tokens, GitHub's default since 2022, pass it.
    """

    secret_type = "GitHub fine-grained token"
    denylist = (re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}(?![A-Za-z0-9])"),)


class NpmAccessTokenDetector(RegexBasedDetector):
    """Scans for npm access tokens (``npm_`` and 36 letters and digits) anywhere, not only in an ``.npmrc`` line."""

    secret_type = "npm access token"
    denylist = (re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),)


class BearerTokenDetector(RegexBasedDetector):
    """Scans for a Bearer token, as in an echoed ``Authorization`` header."""

    secret_type = "Bearer token"
    denylist = (re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{12,}", re.IGNORECASE),)


class AWSSecretKeyDetector(RegexBasedDetector):
    """Scans for an AWS secret access key named as such (``aws_secret_access_key`` and 40 characters)."""

    secret_type = "AWS secret access key"
    denylist = (re.compile(r"aws_?secret_?(?:access_?)?key\W{0,6}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])", re.IGNORECASE),)


class CredentialHeaderDetector(RegexBasedDetector):
    """Scans for an ``Authorization`` or api-key header or field: recorded runs never keep headers."""

    secret_type = "authorization or api-key header"
    denylist = (
        re.compile(r"[\"']?\bauthorization[\"']?\s*[:=]\s*[\"']?\S", re.IGNORECASE),
        re.compile(r"[\"']\s*(?:x-)?api[-_]?key[\"']\s*:", re.IGNORECASE),
    )


#: labkit's plugins, in the order `labkit.secret_scan.plugins` adds them.
OWN_PLUGINS: tuple[type[RegexBasedDetector], ...] = (
    OpenAIStyleKeyDetector,
    HuggingFaceTokenDetector,
    GoogleAPIKeyDetector,
    GitHubFineGrainedTokenDetector,
    NpmAccessTokenDetector,
    BearerTokenDetector,
    AWSSecretKeyDetector,
    CredentialHeaderDetector,
)
