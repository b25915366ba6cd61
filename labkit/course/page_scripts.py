"""The scripts an exported page carries so that formulas and diagrams render offline: MathJax and Mermaid.

Both are single-file builds vendored into ``labkit/course/vendored/`` from
pinned npm packages, with their licences: `SCRIPTS` names each one's package,
version, the npm tarball's integrity and the file's SHA-256, and `script_text`
refuses a file whose digest differs. No CDN is ever named: ``labkit run --html``
works, and its pages render, with the network off. To move to another version,
change `SCRIPTS` and run ``python -m labkit.course.page_scripts`` (it needs npm):
it fetches the pinned tarballs with ``npm pack``, checks their integrity and
rewrites the files, printing the digests to put into `SCRIPTS`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from labkit.errors import LabkitError

FOLDER = Path(__file__).parent / "vendored"


class PageScriptChanged(LabkitError, ValueError):
    """A vendored page script is missing or no longer matches the digest pinned in `SCRIPTS`."""


@dataclass(frozen=True)
class PageScript:
    """One script an exported page may carry, and the npm package it was taken from."""

    package: str
    """The npm package (``mathjax``)."""
    version: str
    """Its exact version."""
    integrity: str
    """The npm registry's integrity of the package's tarball (``sha512-...``)."""
    member: str
    """The file inside the tarball."""
    file: str
    """The vendored copy's name in `FOLDER`; its licence sits beside it as ``LICENSE.<package>``."""
    sha256: str
    """The SHA-256 of that copy."""


SCRIPTS: dict[str, PageScript] = {
    "mathjax": PageScript(
        package="mathjax",
        version="3.2.2",
        integrity="sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        member="package/es5/tex-svg.js",
        file="mathjax-tex-svg.js",
        sha256="d4295dc33744836935c1399feece5159577b34c5c8ffb9f1c6324cd82e03a882",
    ),
    "mermaid": PageScript(
        package="mermaid",
        version="11.10.0",  # the version nbconvert's lab template names
        integrity="sha512-oQsFzPBy9xlpnGxUqLbVY8pvknLlsNIJ0NWwi8SUJjhbP1IT0E0o1lfhU4iYV3ubpy+xkzkaOyDUQMn06vQElQ==",
        member="package/dist/mermaid.min.js",
        file="mermaid.min.js",
        sha256="0755e39315802b1f9644afbc95ef1eccd4015a47399deae280bf1c1fd33835c2",
    ),
}

#: Text that would end or confuse an inline ``<script>`` element; a vendored script must hold none.
_UNSAFE_INLINE = re.compile(r"</?script", re.IGNORECASE)


def script_text(name: str) -> str:
    """Return the vendored script ``name`` (``mathjax`` or ``mermaid``), checked against its pinned SHA-256."""
    script = SCRIPTS[name]
    path = FOLDER / script.file
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PageScriptChanged(
            f"{path}: cannot read the vendored {script.package} script ({exc.strerror}); "
            "restore it with `git checkout -- labkit/course/vendored` or reinstall labkit"
        ) from None
    if hashlib.sha256(data).hexdigest() != script.sha256:
        raise PageScriptChanged(
            f"{path} does not match the SHA-256 pinned for {script.package} {script.version}; restore it with "
            "`git checkout -- labkit/course/vendored`, or run `python -m labkit.course.page_scripts` "
            "and pin the digests it prints"
        )
    text = data.decode("utf-8")
    if _UNSAFE_INLINE.search(text):
        raise PageScriptChanged(f"{path} contains a script tag, so it cannot be inlined in a page")
    return text


def update(destination: Path = FOLDER) -> dict[str, str]:
    """Fetch each pinned package with ``npm pack``, check its integrity, write the file and its licence; return digests."""
    import json
    import subprocess
    import tarfile
    import tempfile

    digests = {}
    with tempfile.TemporaryDirectory(prefix="labkit-npm-") as tmp:
        for name, script in SCRIPTS.items():
            spec = f"{script.package}@{script.version}"
            packed = subprocess.run(
                ["npm", "pack", spec, "--json", "--pack-destination", tmp],
                check=True,
                capture_output=True,
                text=True,
                timeout=600,
            )
            (info,) = json.loads(packed.stdout)
            if info["integrity"] != script.integrity:
                raise PageScriptChanged(f"{spec}: the registry's tarball has integrity {info['integrity']}")
            with tarfile.open(Path(tmp) / info["filename"]) as tarball:
                for member, target in ((script.member, script.file), ("package/LICENSE", f"LICENSE.{name}")):
                    extracted = tarball.extractfile(member)
                    if extracted is None:
                        raise PageScriptChanged(f"{spec}: {member} is not a file in the tarball")
                    (destination / target).write_bytes(extracted.read())
            digests[name] = hashlib.sha256((destination / script.file).read_bytes()).hexdigest()
    return digests


if __name__ == "__main__":
    for name, digest in update().items():
        print(f"{name}: sha256={digest}")
