"""A secured built-in broker for tests: three listeners, users, ACLs on.

Listeners: SASL_SSL (SCRAM and PLAIN), SASL_PLAINTEXT, and SSL with required client
certificates (mutual TLS), each on its own loopback port. Users are made offline with
``headrace users add --data-dir`` before the broker starts; ``admin`` is a super user.
Certificates are made for the test by ``certs.make_certificates``.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from brokerproc import BrokerProcess, free_port
from certs import Certificates, make_certificates

from headrace.base import ClientSecurity

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PASSWORDS = {
    "admin": "admin-secret",
    "alice": "alice-secret",
    "bob": "bob-secret",
    "streams": "streams-secret",
}


@dataclass
class SecuredBroker:
    process: BrokerProcess
    certs: Certificates
    ports: dict[str, int]
    workdir: Path
    metrics_url: str

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def sasl_ssl(
        self, user: str, mechanism: str = "SCRAM-SHA-512", password: str | None = None
    ) -> ClientSecurity:
        return ClientSecurity(
            security_protocol="SASL_SSL",
            sasl_mechanism=mechanism,
            sasl_username=user,
            sasl_password=password or PASSWORDS[user],
            ssl_cafile=str(self.certs.ca),
        )

    def sasl_plaintext(
        self, user: str, mechanism: str = "PLAIN", password: str | None = None
    ) -> ClientSecurity:
        return ClientSecurity(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_username=user,
            sasl_password=password or PASSWORDS[user],
        )

    def mutual_tls(self) -> ClientSecurity:
        return ClientSecurity(
            security_protocol="SSL",
            ssl_cafile=str(self.certs.ca),
            ssl_certfile=str(self.certs.client_cert),
            ssl_keyfile=str(self.certs.client_key),
        )

    def command_config(self, user: str = "admin") -> Path:
        """A Kafka client properties file for ``--command-config``, as Kafka's tools read."""
        path = self.workdir / f"{user}.properties"
        path.write_text(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule"
            f' required username="{user}" password="{PASSWORDS[user]}";\n'
            f"ssl.truststore.type=PEM\nssl.truststore.location={self.certs.ca}\n"
        )
        return path

    def headrace(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "headrace", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def allow(
        self, principal: str, *resource_args: str, operation: str = "All", pattern: str = "prefixed"
    ) -> None:
        self.headrace(
            "acls",
            "add",
            "--bootstrap-servers",
            self.address("SASL_SSL"),
            "--command-config",
            str(self.command_config()),
            "--allow-principal",
            principal,
            "--operation",
            operation,
            "--resource-pattern-type",
            pattern,
            *resource_args,
        )


def start_secured_broker(workdir: Path, *extra: str) -> SecuredBroker:
    certs = make_certificates(workdir / "certs")
    ports = {name: free_port() for name in ("SASL_SSL", "SASL_PLAINTEXT", "SSL")}
    data = workdir / "data"
    for user, password in PASSWORDS.items():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "headrace",
                "users",
                "add",
                user,
                "--password-stdin",
                "--data-dir",
                str(data),
            ],
            input=password + "\n",
            text=True,
            check=True,
            capture_output=True,
            timeout=60,
        )
    config = workdir / "server.properties"
    config.write_text(
        "listeners=" + ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()) + "\n"
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.location={certs.server_keystore}\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={certs.ca}\n"
        "ssl.client.auth=required\n"
        "sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN\n"
        f"authorizer.class.name={STANDARD_AUTHORIZER}\n"
        "super.users=User:admin\n"
        "allow.everyone.if.no.acl.found=false\n"
    )
    metrics_port = free_port()
    process = BrokerProcess(
        data,
        *extra,
        "--metrics-listen",
        f"127.0.0.1:{metrics_port}",
        port=ports["SASL_SSL"],
        config=config,
    ).start()
    return SecuredBroker(process, certs, ports, workdir, f"http://127.0.0.1:{metrics_port}/metrics")
