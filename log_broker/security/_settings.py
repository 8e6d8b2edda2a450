"""The broker's security settings, read from Kafka's own ``server.properties`` keys.

``listeners`` names one or more endpoints (``PLAINTEXT://127.0.0.1:9092,
SASL_SSL://127.0.0.1:9093``); a listener's name is its security protocol unless
``listener.security.protocol.map`` maps a custom name (``CLIENT:SASL_SSL``).
``advertised.listeners`` gives, per listener name, the address Metadata hands to clients
that connected through that listener (by default the bound address).
"""

from __future__ import annotations

from dataclasses import dataclass, field

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# Older Kafka's ZooKeeper-era name, still found in many server.properties files.
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
DEFAULT_SASL_MECHANISMS: tuple[str, ...] = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")


class SecurityConfigError(ValueError):
    """A server.properties value that cannot work; the message names the key."""


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    protocol: str
    host: str
    port: int
    advertised_host: str | None = None
    advertised_port: int | None = None

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def authenticates(self) -> bool:
        return self.uses_sasl or self.protocol == "SSL"

    def advertised(self) -> tuple[str, int]:
        return (self.advertised_host or self.host, self.advertised_port or self.port)


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """PEM only (``ssl.keystore.type=PEM``): Python's ssl reads no JKS or PKCS#12."""

    keystore_location: str | None = None
    certificate_chain: str | None = None
    private_key: str | None = field(default=None, repr=False)  # inline PEM: a secret
    key_password: str | None = field(default=None, repr=False)
    truststore_location: str | None = None
    truststore_certificates: str | None = None
    client_auth: str = "none"  # required | requested | none


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    tls: TlsSettings | None = None
    sasl_mechanisms: tuple[str, ...] = DEFAULT_SASL_MECHANISMS
    acls_enabled: bool = False
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


def _endpoints(value: str, key: str) -> list[tuple[str, str, int]]:
    endpoints = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, sep, address = item.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise SecurityConfigError(f"{key}: {item!r} is not NAME://HOST:PORT")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        endpoints.append((name.upper(), host or "0.0.0.0", int(port)))
    return endpoints


def parse_listeners(
    listeners: str, advertised: str | None = None, protocol_map: str | None = None
) -> tuple[Listener, ...]:
    protocols = {p: p for p in PROTOCOLS}
    for item in filter(None, (p.strip() for p in (protocol_map or "").split(","))):
        name, sep, protocol = item.partition(":")
        if not sep or protocol.upper() not in PROTOCOLS:
            raise SecurityConfigError(
                f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL with a"
                f" protocol among {', '.join(PROTOCOLS)}"
            )
        protocols[name.upper()] = protocol.upper()
    advertised_by_name = {
        name: (host, port)
        for name, host, port in _endpoints(advertised or "", "advertised.listeners")
    }
    result: list[Listener] = []
    for name, host, port in _endpoints(listeners, "listeners"):
        if name not in protocols:
            raise SecurityConfigError(
                f"listeners: {name!r} is no security protocol and is not in"
                " listener.security.protocol.map"
            )
        if any(existing.name == name for existing in result):
            raise SecurityConfigError(f"listeners: {name!r} appears twice")
        ad_host, ad_port = advertised_by_name.pop(name, (None, None))
        result.append(Listener(name, protocols[name], host, port, ad_host, ad_port))
    if not result:
        raise SecurityConfigError("listeners: no listener given")
    if advertised_by_name:
        raise SecurityConfigError(
            f"advertised.listeners: {sorted(advertised_by_name)} not among listeners"
        )
    return tuple(result)


def _flag(props: dict[str, str], key: str, default: bool) -> bool:
    value = props.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise SecurityConfigError(f"{key}: expected true or false, got {value!r}")
    return value.strip().lower() == "true"


def security_from_properties(props: dict[str, str]) -> SecurityConfig:
    for key in ("ssl.keystore.type", "ssl.truststore.type"):
        if props.get(key, "PEM").upper() != "PEM":
            raise SecurityConfigError(f"{key}: only PEM is supported")
    tls = None
    if any(key in props for key in ("ssl.keystore.location", "ssl.keystore.certificate.chain")):
        client_auth = props.get("ssl.client.auth", "none").lower()
        if client_auth not in ("required", "requested", "none"):
            raise SecurityConfigError("ssl.client.auth: required, requested or none")
        tls = TlsSettings(
            keystore_location=props.get("ssl.keystore.location"),
            certificate_chain=props.get("ssl.keystore.certificate.chain"),
            private_key=props.get("ssl.keystore.key"),
            key_password=props.get("ssl.key.password"),
            truststore_location=props.get("ssl.truststore.location"),
            truststore_certificates=props.get("ssl.truststore.certificates"),
            client_auth=client_auth,
        )
    mechanisms = DEFAULT_SASL_MECHANISMS
    if "sasl.enabled.mechanisms" in props:
        mechanisms = tuple(
            m.strip().upper() for m in props["sasl.enabled.mechanisms"].split(",") if m.strip()
        )
        unknown = set(mechanisms) - set(DEFAULT_SASL_MECHANISMS)
        if unknown:
            raise SecurityConfigError(
                f"sasl.enabled.mechanisms: {sorted(unknown)} not supported"
                f" (supported: {', '.join(DEFAULT_SASL_MECHANISMS)})"
            )
    authorizer = props.get("authorizer.class.name", "").strip()
    if authorizer not in ("", STANDARD_AUTHORIZER, ACL_AUTHORIZER):
        raise SecurityConfigError(
            f"authorizer.class.name: {authorizer!r} unknown; use {STANDARD_AUTHORIZER}"
        )
    super_users = frozenset(u.strip() for u in props.get("super.users", "").split(";") if u.strip())
    return SecurityConfig(
        tls=tls,
        sasl_mechanisms=mechanisms,
        acls_enabled=bool(authorizer),
        super_users=super_users,
        allow_everyone_if_no_acl_found=_flag(props, "allow.everyone.if.no.acl.found", False),
    )
