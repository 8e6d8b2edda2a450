"""The broker's plain settings as one table, and what is made from it.

A plain setting is declared once, as a field of ``BrokerConfig`` whose default is given
through :func:`setting`: that row names the setting's Kafka key, its kind (how a
server.properties value is read and how DescribeConfigs prints it), the help of its
``headrace broker`` flag and whether there is a flag at all. From the rows come the
server.properties keys (:func:`from_properties`), DescribeConfigs' broker entries
(:func:`describe`) and the flags (:func:`add_flags`, :func:`from_flags`), so adding a
setting is one line. Settings with more structure than one key and one value (the data
directory, listeners, security, share groups, topic defaults, fsync) are written by hand
where they are read.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = [
    "BOOLEAN",
    "INT",
    "LIST",
    "STRING",
    "BrokerSetting",
    "Kind",
    "add_flags",
    "describe",
    "from_flags",
    "from_properties",
    "setting",
    "setting_rows",
]

T = TypeVar("T")

# The key of a dataclass field's metadata that holds its row.
_ROW = "headrace.broker_setting"


@dataclasses.dataclass(frozen=True, slots=True)
class Kind:
    """How one kind of value is read from text and printed the way Kafka prints it."""

    name: str
    read: Callable[[str], Any]
    show: Callable[[Any], str]


def _read_boolean(text: str) -> bool:
    # Kafka's ConfigDef reads booleans case-insensitively; anything else but "true" is off.
    return text.lower() == "true"


def _read_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


# An unset optional limit (None until the broker derives it at start) prints as "None".
INT = Kind("int", int, str)
BOOLEAN = Kind("boolean", _read_boolean, lambda value: str(value).lower())
LIST = Kind("list", _read_list, ",".join)
STRING = Kind("string", str, str)


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerSetting:
    key: str  # Kafka's name, in server.properties and DescribeConfigs
    kind: Kind
    # The flag's help; None leaves the flag without one, as some always were.
    help: str | None
    # True: the flag is the key with dashes (--fetch-max-bytes); a string: that spelling
    # (an on/off flag sets the opposite of the default); False: no flag.
    flag: bool | str
    # Listed under "limits" in ``headrace broker --help``.
    limit: bool
    # Other keys read for the same setting (the later one given wins) and reported too.
    synonyms: tuple[str, ...]
    # Filled from the BrokerConfig field the row is declared on.
    field: str = ""
    default: Any = None

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.synonyms)

    @property
    def flag_name(self) -> str | None:
        if self.flag is False:
            return None
        return self.flag if isinstance(self.flag, str) else "--" + self.key.replace(".", "-")


def setting(
    key: str,
    default: T,
    *,
    kind: Kind = INT,
    help: str | None = None,
    flag: bool | str = True,
    limit: bool = False,
    synonyms: tuple[str, ...] = (),
) -> T:
    """A dataclass field's default that also carries the setting's row."""
    row = BrokerSetting(key, kind, help, flag, limit, synonyms)
    # The dataclass machinery sees the Field; type checkers see a default of type T.
    return dataclasses.field(default=default, metadata={_ROW: row})


def setting_rows(config_type: type) -> tuple[BrokerSetting, ...]:
    """The rows declared on ``config_type``'s fields, in field order."""
    return tuple(
        dataclasses.replace(f.metadata[_ROW], field=f.name, default=f.default)
        for f in dataclasses.fields(config_type)
        if _ROW in f.metadata
    )


def from_properties(rows: tuple[BrokerSetting, ...], props: Mapping[str, str]) -> dict[str, Any]:
    """Field name -> value for every row whose key (or synonym) ``props`` gives."""
    settings: dict[str, Any] = {}
    for row in rows:
        for key in row.keys:
            if key in props:
                try:
                    settings[row.field] = row.kind.read(props[key].strip())
                except ValueError:
                    raise ValueError(f"{key}: cannot read {props[key]!r}") from None
    return settings


def describe(rows: tuple[BrokerSetting, ...], config: object) -> dict[str, str]:
    """Key -> value as DescribeConfigs reports it, synonyms included."""
    return {key: row.kind.show(getattr(config, row.field)) for row in rows for key in row.keys}


def add_flags(
    rows: tuple[BrokerSetting, ...],
    parser: argparse.ArgumentParser,
    limits: argparse._ArgumentGroup,
) -> None:
    """One flag per row that has one; its default None means "not given"."""
    for row in rows:
        name = row.flag_name
        if name is None:
            continue
        target = limits if row.limit else parser
        if row.kind is BOOLEAN:
            target.add_argument(
                name, dest=row.field, action="store_const", const=not row.default, help=row.help
            )
        else:
            target.add_argument(
                name,
                dest=row.field,
                type=row.kind.read,
                metavar=name.removeprefix("--").upper().replace("-", "_"),
                help=row.help,
            )


def from_flags(rows: tuple[BrokerSetting, ...], args: argparse.Namespace) -> dict[str, Any]:
    """Field name -> value of every flag given."""
    return {
        row.field: getattr(args, row.field)
        for row in rows
        if row.flag_name is not None and getattr(args, row.field) is not None
    }
