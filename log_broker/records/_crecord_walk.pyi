# The C extension built from _crecord_walk.c (see _compiled_record_reader).

IN_ORDER: int
KEYLESS: int
ATTRIBUTES_OK: int

def walk(data: bytes | bytearray | memoryview, count: int, /) -> int | str: ...
