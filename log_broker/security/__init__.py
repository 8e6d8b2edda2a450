"""Broker security: listeners and TLS, SASL (PLAIN, SCRAM), credentials and ACLs.

Errors: ``SecurityConfigError`` (a server.properties value that cannot work) is a
ValueError; ``AuthenticationRequiredError`` and ``SaslFailedError`` are BrokerErrors
that close the connection they arrived on.
"""

from headrace.base.acls import CLUSTER_NAME as CLUSTER_NAME
from headrace.base.acls import AclBinding as AclBinding
from headrace.base.acls import AclFilter as AclFilter
from headrace.base.acls import Operation as Operation
from headrace.base.acls import PatternType as PatternType
from headrace.base.acls import Permission as Permission
from headrace.base.acls import ResourceType as ResourceType
from headrace.base.scram import ScramMechanism as ScramMechanism
from headrace.base.scram_credentials import CredentialStore as CredentialStore

from ._acl import Authorizer as Authorizer
from ._broker_security import BrokerSecurity as BrokerSecurity
from ._sasl import SaslError as SaslError
from ._sasl import SaslState as SaslState
from ._session import AuthenticationRequiredError as AuthenticationRequiredError
from ._session import SaslFailedError as SaslFailedError
from ._session import Session as Session
from ._settings import Listener as Listener
from ._settings import SecurityConfig as SecurityConfig
from ._settings import SecurityConfigError as SecurityConfigError
from ._settings import parse_listeners as parse_listeners
from ._settings import security_from_properties as security_from_properties

__all__ = [
    "CLUSTER_NAME",
    "AclBinding",
    "AclFilter",
    "AuthenticationRequiredError",
    "Authorizer",
    "BrokerSecurity",
    "CredentialStore",
    "Listener",
    "Operation",
    "PatternType",
    "Permission",
    "ResourceType",
    "SaslError",
    "SaslFailedError",
    "SaslState",
    "ScramMechanism",
    "SecurityConfig",
    "SecurityConfigError",
    "Session",
    "parse_listeners",
    "security_from_properties",
]
