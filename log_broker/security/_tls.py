"""The server's TLS context (TLS 1.2 and newer) and the principal a client certificate names.

Kafka names a mutual-TLS client ``User:`` + its certificate's subject as an X.500
name in RFC 2253 order (most specific first: ``CN=alice,O=Acme,C=DE``); a client
without a certificate is ``User:ANONYMOUS``.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path
from typing import Any

from ._settings import SecurityConfigError, TlsSettings

ANONYMOUS = "User:ANONYMOUS"

_CLIENT_AUTH = {
    "required": ssl.CERT_REQUIRED,
    "requested": ssl.CERT_OPTIONAL,
    "none": ssl.CERT_NONE,
}
# RFC 2253's short names; others are written as their OpenSSL long names, as Java does.
_SHORT = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "stateOrProvinceName": "ST",
    "localityName": "L",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        if settings.keystore_location:
            context.load_cert_chain(settings.keystore_location, password=settings.key_password)
        else:
            _load_inline_chain(context, settings)
        if settings.truststore_location:
            context.load_verify_locations(cafile=settings.truststore_location)
        elif settings.truststore_certificates:
            context.load_verify_locations(cadata=settings.truststore_certificates)
    except (OSError, ssl.SSLError) as exc:
        # The message names files, never key material or passwords.
        raise SecurityConfigError(f"ssl.keystore/truststore: cannot load: {exc}") from None
    context.verify_mode = _CLIENT_AUTH[settings.client_auth]
    if settings.client_auth != "none" and not (
        settings.truststore_location or settings.truststore_certificates
    ):
        raise SecurityConfigError(
            "ssl.client.auth needs ssl.truststore.location to verify client certificates"
        )
    return context


def _load_inline_chain(context: ssl.SSLContext, settings: TlsSettings) -> None:
    if not (settings.certificate_chain and settings.private_key):
        raise SecurityConfigError("ssl.keystore.certificate.chain needs ssl.keystore.key beside it")
    # ssl loads chains only from files: write them to a private directory, load, delete.
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "keystore.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(
                settings.private_key.strip() + "\n" + settings.certificate_chain.strip() + "\n"
            )
        context.load_cert_chain(path, password=settings.key_password)


def principal_from_certificate(peer_certificate: dict[str, Any] | None) -> str:
    """``User:`` + the subject in RFC 2253 order, from ``SSLObject.getpeercert()``."""
    if not peer_certificate or not peer_certificate.get("subject"):
        return ANONYMOUS
    parts = []
    for rdn in reversed(peer_certificate["subject"]):
        parts.append("+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn))
    return "User:" + ",".join(parts)


def _escape(value: str) -> str:
    escaped = "".join("\\" + ch if ch in ',+"\\<>;' else ch for ch in value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return escaped
