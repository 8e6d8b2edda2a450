"""What the broker holds for security: credentials, ACLs, the TLS context; one per broker.

It opens the stores in the data dir at start, hands each listener its TLS context, and
makes each new connection's ``Session`` from what the socket tells (peer address,
client certificate).
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import ssl
from dataclasses import dataclass
from pathlib import Path

from headrace.base.scram_credentials import CredentialStore

from ._acl import Authorizer
from ._session import Session
from ._settings import Listener, SecurityConfig, SecurityConfigError
from ._tls import ANONYMOUS, principal_from_certificate, server_context

log = logging.getLogger("headrace.broker")


@dataclass(eq=False)
class BrokerSecurity:
    config: SecurityConfig
    credentials: CredentialStore
    authorizer: Authorizer | None
    tls: ssl.SSLContext | None
    # SASL_SSL listeners authenticate by SASL; as in Kafka, ssl.client.auth applies to
    # SSL listeners only, so these ask no client certificate.
    tls_for_sasl: ssl.SSLContext | None

    @classmethod
    def open(
        cls, data_dir: Path, config: SecurityConfig, listeners: tuple[Listener, ...]
    ) -> BrokerSecurity:
        tls = tls_for_sasl = None
        if any(listener.uses_tls for listener in listeners):
            if config.tls is None:
                raise SecurityConfigError(
                    "an SSL or SASL_SSL listener needs ssl.keystore.location"
                    " (or ssl.keystore.certificate.chain and ssl.keystore.key)"
                )
            tls = server_context(config.tls)
            tls_for_sasl = server_context(dataclasses.replace(config.tls, client_auth="none"))
        authorizer = None
        if config.acls_enabled:
            authorizer = Authorizer.open(
                data_dir,
                super_users=config.super_users,
                allow_if_no_acl=config.allow_everyone_if_no_acl_found,
            )
        return cls(config, CredentialStore.open(data_dir), authorizer, tls, tls_for_sasl)

    def ssl_for(self, listener: Listener) -> ssl.SSLContext | None:
        if not listener.uses_tls:
            return None
        return self.tls_for_sasl if listener.uses_sasl else self.tls

    def new_session(self, listener: Listener, writer: asyncio.StreamWriter) -> Session:
        peer = writer.get_extra_info("peername")
        principal = ANONYMOUS
        ssl_object = writer.get_extra_info("ssl_object")
        if ssl_object is not None:
            principal = principal_from_certificate(ssl_object.getpeercert())
        return Session(
            listener,
            peer[0] if peer else "",
            tls_principal=principal,
            authorizer=self.authorizer,
            credentials=self.credentials,
            sasl_mechanisms=self.config.sasl_mechanisms,
        )

    def warn_about_open_listeners(self, listeners: tuple[Listener, ...]) -> None:
        """Log a warning for each listener reachable off this host that asks no identity."""
        for listener in listeners:
            authenticates = listener.uses_sasl or (
                listener.protocol == "SSL"
                and self.config.tls is not None
                and self.config.tls.client_auth == "required"
            )
            if not authenticates and not _is_loopback(listener.host):
                log.warning(
                    "listener %s on %s:%d is reachable from other hosts and does not"
                    " authenticate clients: anyone who can connect may read, write and"
                    " delete topics%s",
                    listener.name,
                    listener.host,
                    listener.port,
                    "" if self.authorizer else " (no authorizer is configured)",
                )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
