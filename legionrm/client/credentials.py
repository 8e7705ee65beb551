"""A user's credentials file: the one thing a user holds to reach legionrm.

``legionrm user add NAME`` writes ``$LEGIONRM_HOME/auth/users/NAME.credentials``
(mode 0600) and the administrator hands it to the user.  It is TOML::

    # legionrm credentials of alice: keep this file private (mode 0600)
    version = 1
    url = "https://10.1.2.3:8470"            # the gateway
    user = "alice"
    fingerprint = "sha256:4f:2a:..."         # the gateway's TLS certificate ("" for http on 127.0.0.1)
    private_key = \"\"\"
    -----BEGIN PRIVATE KEY-----
    ...
    -----END PRIVATE KEY-----
    \"\"\"

A client looks for it (:func:`find`) at ``--credentials FILE``, then
``$LEGIONRM_CREDENTIALS``, then ``~/.legionrm/credentials``, then (the service
account on the head) the home's own ``auth/users/<LEGIONRM_USER or login>.credentials``
that ``legionrm up`` writes for the administrator who started it.  A file
that group or others may read is refused, as a key file is.

A file in the very form :meth:`Credentials.text` writes is read line by line
(:func:`plain`); any other TOML goes to ``tomllib``, so a CLI call on a file
as ``user add`` wrote it does not import a TOML parser (a test holds the two
readings equal).
"""

from __future__ import annotations

import os
import stat
from collections import namedtuple

from legionrm.client.errors import CredentialsError
from legionrm.client.signing import key_pem

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

FORMAT_VERSION = 1
ENV = "LEGIONRM_CREDENTIALS"
SUFFIX = ".credentials"
MAX_BYTES = 16_384


def fingerprint(der: bytes) -> str:
    """The pinned form of a certificate: ``sha256:`` and the SHA-256 of its DER bytes, hex pairs with colons."""
    import hashlib  # here: only an https gateway's certificate is fingerprinted

    return "sha256:" + ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


class Credentials(namedtuple("Credentials", ("url", "user", "private_key_pem", "fingerprint", "path"), defaults=("", ""))):
    """The gateway's ``url``, the ``user``, their Ed25519 private key (``private_key_pem``), the pinned
    certificate ``fingerprint`` (default "") and the file it was read from (``path``, default ""), all
    str.  (collections' namedtuple, not a dataclass or typing's NamedTuple: a CLI call does not pay
    for importing dataclasses or typing.)"""

    __slots__ = ()

    def __repr__(self) -> str:  # never the key
        return f"Credentials(url={self.url!r}, user={self.user!r}, fingerprint={self.fingerprint!r}, path={self.path!r})"

    @classmethod
    def of(cls, url: str, user: str, private_key: Any, fingerprint: str = "") -> Credentials:
        """The credentials of ``user`` holding ``private_key`` (an Ed25519 private key object)."""
        return cls(url=url.rstrip("/"), user=user, private_key_pem=key_pem(private_key), fingerprint=fingerprint)

    def text(self) -> str:
        """The file's TOML text (see the module doc)."""
        def q(v: str) -> str:
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return (f"# legionrm credentials of {self.user}: keep this file private (mode 0600)\n"
                f"version = {FORMAT_VERSION}\nurl = {q(self.url)}\nuser = {q(self.user)}\n"
                f"fingerprint = {q(self.fingerprint)}\nprivate_key = \"\"\"\n{self.private_key_pem.strip()}\n\"\"\"\n")

    def write(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write this file at ``path`` with mode 0600 (atomically, never readable by others:
        :func:`legionrm.homefs.write_private`); an existing one is kept unless ``overwrite``."""
        from pathlib import Path  # here: a call that only reads credentials pays for neither

        from legionrm.homefs import write_private

        target = Path(path)
        if not overwrite and target.exists():
            raise CredentialsError(f"{target}: already exists; remove it first")
        return write_private(target, self.text())


def read(path: str | os.PathLike[str]) -> Credentials:
    """The credentials in ``path``; :class:`CredentialsError` naming the file and what is wrong."""
    where = str(path)
    try:
        fd = os.open(where, os.O_RDONLY)
    except FileNotFoundError:
        raise CredentialsError(f"{where}: no such credentials file") from None
    except OSError as exc:
        raise CredentialsError(f"{where}: cannot read it: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
        if mode & 0o077:
            raise CredentialsError(f"{where}: mode {mode:04o} lets others read your key; run: chmod 600 {where}")
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise CredentialsError(f"{where}: too large to be a credentials file")
    try:
        text = data.decode("utf-8")
        doc = plain(text)
        if doc is None:
            import tomllib  # here: a file not in the form text() writes

            doc = tomllib.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise CredentialsError(f"{where}: not a credentials file: {exc}") from None
    if doc.get("version") != FORMAT_VERSION:
        raise CredentialsError(f"{where}: version must be {FORMAT_VERSION}, not {doc.get('version')!r}")
    for key in ("url", "user", "private_key"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise CredentialsError(f"{where}: {key!r} is missing or not text")
    fp = doc.get("fingerprint", "")
    if not isinstance(fp, str):
        raise CredentialsError(f"{where}: 'fingerprint' is not text")
    if doc["url"].startswith("https://") and not fp:
        raise CredentialsError(f"{where}: an https gateway needs the certificate's 'fingerprint'")
    return Credentials(url=doc["url"].rstrip("/"), user=doc["user"], private_key_pem=doc["private_key"],
                       fingerprint=fp, path=where)


_PEM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=- ")
"""What a line of a PEM block may hold: base64, its padding, and the BEGIN / END lines."""


def plain(text: str) -> dict[str, Any] | None:
    """The keys of a credentials file in the form :meth:`Credentials.text` writes (comment lines,
    ``version = 1``, ``key = "text"`` without escapes, the key in a ``\"\"\"`` block of PEM lines),
    as ``tomllib`` reads them; None for anything else (then ``tomllib`` reads it: escapes, other
    spacing, tables, a key twice, a line this form never has)."""
    doc: dict[str, Any] = {}
    lines = iter(text.split("\n"))
    for line in lines:
        if not line or (line[0] == "#" and line.isprintable()):
            continue
        key, eq, value = line.partition(" = ")
        if not eq or key in doc or key not in ("version", "url", "user", "fingerprint", "private_key"):
            return None
        if key == "version" and value == "1":
            doc[key] = 1
        elif key == "private_key" and value == '"""':
            block = []
            for row in lines:
                if row == '"""':
                    break
                if not _PEM.issuperset(row):
                    return None
                block.append(row + "\n")
            else:
                return None  # no closing delimiter
            doc[key] = "".join(block)
        elif (key != "version" and len(value) >= 2 and value[0] == value[-1] == '"' and value[1:-1].isprintable()
              and '"' not in value[1:-1] and "\\" not in value):
            doc[key] = value[1:-1]
        else:
            return None
    return doc


def _places(explicit: str | os.PathLike[str] | None = None) -> Iterator[str]:
    """Where a client looks, in order, each made only when the one before it is not there (the
    home's file asks for the login name: a user with their own file does not pay for that)."""
    if explicit:
        yield os.fspath(explicit)
        return
    if os.environ.get(ENV):
        yield os.environ[ENV]
        return
    own = os.path.join(os.path.expanduser("~"), ".legionrm")
    yield os.path.join(own, "credentials")
    user = os.environ.get("LEGIONRM_USER")
    if not user:
        from legionrm.homefs import login_name

        user = login_name()
    yield os.path.join(os.environ.get("LEGIONRM_HOME", own), "auth", "users", f"{user}{SUFFIX}")


def candidates(explicit: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where a client looks, in order (see the module doc)."""
    from pathlib import Path

    return [Path(p) for p in _places(explicit)]


def find(explicit: str | os.PathLike[str] | None = None) -> Credentials:
    """The first credentials file of :func:`candidates` that exists, read (one named by
    ``explicit`` or ``$LEGIONRM_CREDENTIALS`` is read whether it exists or not: its absence is
    said); else one line saying where we looked."""
    looked = []
    for p in _places(explicit):
        if explicit or os.environ.get(ENV) or os.path.exists(p):
            return read(p)
        looked.append(p)
    raise CredentialsError("no credentials: looked at " + ", ".join(looked)
                           + f" (pass --credentials FILE or set {ENV}; an administrator makes one with "
                           "`legionrm user add NAME`)")
