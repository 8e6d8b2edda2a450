from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Customer(_message.Message):
    __slots__ = ("id", "name", "tier", "address")
    class Address(_message.Message):
        __slots__ = ("city",)
        CITY_FIELD_NUMBER: _ClassVar[int]
        city: str
        def __init__(self, city: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    tier: int
    address: Customer.Address
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., tier: _Optional[int] = ..., address: _Optional[_Union[Customer.Address, _Mapping]] = ...) -> None: ...
