"""Certificates made for a test with the openssl command: a CA, a server and clients.

``make_certificates(directory)`` writes PEM files and returns their paths; the server
certificate names 127.0.0.1 and localhost, so clients may verify the host name.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certificates:
    ca: Path
    server_cert: Path
    server_key: Path
    server_keystore: Path  # chain and key in one PEM, as ssl.keystore.location reads it
    client_cert: Path
    client_key: Path
    client_subject: str  # as Kafka renders it (RFC 2253, most specific first)


def _openssl(*args: str) -> None:
    binary = shutil.which("openssl")
    assert binary, "the openssl command is required to make test certificates"
    subprocess.run([binary, *args], check=True, capture_output=True, timeout=60)


def _signed(
    directory: Path, name: str, subject: str, ca_cert: Path, ca_key: Path, extensions: str
) -> tuple[Path, Path]:
    key, csr, cert = (
        directory / f"{name}.key",
        directory / f"{name}.csr",
        directory / f"{name}.pem",
    )
    ext = directory / f"{name}.ext"
    ext.write_text(extensions)
    _openssl(
        "req",
        "-new",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(csr),
        "-subj",
        subject,
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca_cert),
        "-CAkey",
        str(ca_key),
        "-CAcreateserial",
        "-out",
        str(cert),
        "-days",
        "2",
        "-sha256",
        "-extfile",
        str(ext),
    )
    return cert, key


def make_certificates(directory: Path) -> Certificates:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca = directory / "ca.key", directory / "ca.pem"
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(ca_key),
        "-out",
        str(ca),
        "-days",
        "2",
        "-subj",
        "/CN=headrace-test-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    )
    server_cert, server_key = _signed(
        directory,
        "server",
        "/CN=localhost",
        ca,
        ca_key,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    )
    keystore = directory / "server-keystore.pem"
    keystore.write_text(server_cert.read_text() + server_key.read_text())
    client_cert, client_key = _signed(
        directory,
        "client",
        "/C=DE/O=Headrace Test/CN=alice-tls",
        ca,
        ca_key,
        "extendedKeyUsage=clientAuth\n",
    )
    return Certificates(
        ca,
        server_cert,
        server_key,
        keystore,
        client_cert,
        client_key,
        "CN=alice-tls,O=Headrace Test,C=DE",
    )
