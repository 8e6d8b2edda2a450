"""Protobuf compatibility as Confluent checks it: the wire format decides.

Messages are matched by full name and fields by number (names may change freely):

* a message the writer used, missing from the reader: MESSAGE_REMOVED
* a field whose wire kind changed (scalar groups that share an encoding stay
  compatible: int32, uint32, int64, uint64, bool; sint32, sint64; fixed32, sfixed32;
  fixed64, sfixed64; string, bytes): FIELD_KIND_CHANGED
* a field of message or enum type whose type name changed: FIELD_NAMED_TYPE_CHANGED
* a field moved between singular and repeated (other than packable scalars): an error
* a required field (proto2) added or removed: REQUIRED_FIELD_ADDED / _REMOVED
* the package changed: PACKAGE_CHANGED
Added and removed optional fields are compatible: unknown fields are skipped, absent
ones read as defaults.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from ._schema import ParsedSchema

F = descriptor_pb2.FieldDescriptorProto
_GROUPS = [
    {F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_BOOL},
    {F.TYPE_SINT32, F.TYPE_SINT64},
    {F.TYPE_FIXED32, F.TYPE_SFIXED32},
    {F.TYPE_FIXED64, F.TYPE_SFIXED64},
    {F.TYPE_STRING, F.TYPE_BYTES},
]
_NAMED = {F.TYPE_MESSAGE, F.TYPE_ENUM, F.TYPE_GROUP}


def can_read(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    r: descriptor_pb2.FileDescriptorProto = reader.parsed
    w: descriptor_pb2.FileDescriptorProto = writer.parsed
    found: list[str] = []
    if r.package != w.package:
        found.append(f"PACKAGE_CHANGED: {w.package!r} to {r.package!r}")
    rmessages = dict(_messages(r.message_type, r.package))
    for name, wmsg in _messages(w.message_type, w.package):
        rmsg = rmessages.get(name)
        if rmsg is None:
            found.append(f"MESSAGE_REMOVED: {name}")
            continue
        found += _fields(name, rmsg, wmsg)
    return found


def _messages(messages: object, prefix: str) -> list[tuple[str, descriptor_pb2.DescriptorProto]]:
    out: list[tuple[str, descriptor_pb2.DescriptorProto]] = []
    for msg in messages:  # type: ignore[attr-defined]
        name = f"{prefix}.{msg.name}" if prefix else msg.name
        out.append((name, msg))
        out += _messages(msg.nested_type, name)
    return out


def _same_kind(a: int, b: int) -> bool:
    return a == b or any(a in group and b in group for group in _GROUPS)


def _fields(
    name: str, reader: descriptor_pb2.DescriptorProto, writer: descriptor_pb2.DescriptorProto
) -> list[str]:
    found: list[str] = []
    rfields = {f.number: f for f in reader.field}
    wfields = {f.number: f for f in writer.field}
    for number, wf in wfields.items():
        rf = rfields.get(number)
        where = f"{name}.{wf.name} (field {number})"
        if rf is None:
            if wf.label == F.LABEL_REQUIRED:
                found.append(f"REQUIRED_FIELD_REMOVED: {where}")
            continue
        if not _same_kind(rf.type, wf.type):
            found.append(f"FIELD_KIND_CHANGED: {where}")
        elif rf.type in _NAMED and rf.type_name.lstrip(".") != wf.type_name.lstrip("."):
            found.append(f"FIELD_NAMED_TYPE_CHANGED: {where}: {wf.type_name} to {rf.type_name}")
        if (rf.label == F.LABEL_REPEATED) != (wf.label == F.LABEL_REPEATED):
            found.append(f"FIELD_LABEL_CHANGED: {where}: singular and repeated")
        if rf.HasField("oneof_index") != wf.HasField("oneof_index") and rf.HasField("oneof_index"):
            found.append(f"FIELD_MOVED_TO_ONEOF: {where}")
    for number, rf in rfields.items():
        if number not in wfields and rf.label == F.LABEL_REQUIRED:
            found.append(f"REQUIRED_FIELD_ADDED: {name}.{rf.name} (field {number})")
    return found
