"""What every layer needs and nothing of ours imports from: small, dependency-free helpers.

Errors: ``ClientSecurityError`` (a ValueError) for client security options that cannot work.
"""

from ._client_security import PLAINTEXT as PLAINTEXT
from ._client_security import ClientSecurity as ClientSecurity
from ._client_security import ClientSecurityError as ClientSecurityError
from ._properties import parse_properties as parse_properties
from ._properties import read_properties as read_properties

__all__ = ["PLAINTEXT", "ClientSecurity", "ClientSecurityError", "parse_properties",
           "read_properties"]
