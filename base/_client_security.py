"""A Kafka client's security options, from code or from Kafka's client properties.

``ClientSecurity`` holds what a client needs to reach a secured cluster (TLS, SASL);
its ``repr`` and ``str`` never show a password. ``from_properties`` reads the keys of
Kafka's tools (``--command-config``) and of librdkafka:

    security.protocol   PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl.mechanism      PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
    sasl.jaas.config    ...LoginModule required username="u" password="p";
    sasl.username / sasl.password                       (librdkafka's spelling)
    ssl.truststore.location / ssl.ca.location           CA certificates (PEM)
    ssl.keystore.location                               certificate and key (PEM)
    ssl.certificate.location / ssl.key.location / ssl.key.password
    ssl.endpoint.identification.algorithm               "" turns host checks off
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass, field, fields
from typing import Any

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class ClientSecurityError(ValueError):
    """A security option that cannot work; the message never holds a secret."""


@dataclass(frozen=True)
class ClientSecurity:
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: str | None = field(default=None, repr=False)
    ssl_check_hostname: bool = True

    def __post_init__(self) -> None:
        protocol = self.security_protocol.upper()
        if protocol not in PROTOCOLS:
            raise ClientSecurityError(
                f"security_protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}"
            )
        object.__setattr__(self, "security_protocol", protocol)
        if self.uses_sasl:
            if not self.sasl_mechanism:
                object.__setattr__(self, "sasl_mechanism", "PLAIN")
            if self.sasl_username is None or self.sasl_password is None:
                raise ClientSecurityError(f"{protocol} needs sasl_username and sasl_password")

    def __str__(self) -> str:
        return repr(self)

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> ClientSecurity:
        username, password = props.get("sasl.username"), props.get("sasl.password")
        jaas = props.get("sasl.jaas.config")
        if jaas:
            options = dict(_JAAS_OPTION.findall(jaas))
            username = options.get("username", username)
            password = options.get("password", password)
        keystore = props.get("ssl.keystore.location")
        return cls(
            security_protocol=props.get("security.protocol", "PLAINTEXT"),
            sasl_mechanism=props.get("sasl.mechanism", props.get("sasl.mechanisms")),
            sasl_username=username,
            sasl_password=password,
            ssl_cafile=props.get("ssl.truststore.location", props.get("ssl.ca.location")),
            ssl_certfile=props.get("ssl.certificate.location", keystore),
            ssl_keyfile=props.get("ssl.key.location", keystore),
            ssl_password=props.get("ssl.key.password"),
            ssl_check_hostname=props.get("ssl.endpoint.identification.algorithm", "https").strip()
            != "",
        )

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> ClientSecurity:
        """From keyword options named as the fields (``security_protocol=...``)."""
        names = {f.name for f in fields(cls)}
        unknown = set(options) - names
        if unknown:
            raise ClientSecurityError(f"unknown security options: {sorted(unknown)}")
        return cls(**options)

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.uses_tls:
            return None
        context = ssl.create_default_context(cafile=self.ssl_cafile)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.check_hostname = self.ssl_check_hostname
        if self.ssl_certfile:
            try:
                context.load_cert_chain(
                    self.ssl_certfile, self.ssl_keyfile, password=self.ssl_password
                )
            except (OSError, ssl.SSLError) as exc:
                raise ClientSecurityError(
                    f"cannot load the client certificate {self.ssl_certfile}: {type(exc).__name__}"
                ) from None
        return context

    def aiokafka_options(self) -> dict[str, Any]:
        """Keyword arguments for aiokafka's producer, consumer and admin client."""
        options: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.uses_tls:
            options["ssl_context"] = self.ssl_context()
        if self.uses_sasl:
            options.update(
                sasl_mechanism=self.sasl_mechanism,
                sasl_plain_username=self.sasl_username,
                sasl_plain_password=self.sasl_password,
            )
        return options

    def librdkafka_options(self) -> dict[str, str]:
        """confluent-kafka's (librdkafka's) configuration keys."""
        options = {"security.protocol": self.security_protocol.lower()}
        if self.uses_sasl:
            options.update(
                {
                    "sasl.mechanism": str(self.sasl_mechanism),
                    "sasl.username": str(self.sasl_username),
                    "sasl.password": str(self.sasl_password),
                }
            )
        if self.uses_tls:
            if self.ssl_cafile:
                options["ssl.ca.location"] = self.ssl_cafile
            if self.ssl_certfile:
                options["ssl.certificate.location"] = self.ssl_certfile
            if self.ssl_keyfile:
                options["ssl.key.location"] = self.ssl_keyfile
            if self.ssl_password:
                options["ssl.key.password"] = self.ssl_password
            if not self.ssl_check_hostname:
                options["ssl.endpoint.identification.algorithm"] = "none"
        return options


PLAINTEXT = ClientSecurity()
