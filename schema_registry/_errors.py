"""The one exception root of the schema_registry package, with Confluent's error codes::

    SchemaRegistryError                      (http_status, error_code)
    ├── SubjectNotFound                      404 40401
    ├── VersionNotFound                      404 40402
    ├── SchemaNotFound                       404 40403
    ├── SubjectSoftDeleted                   404 40404
    ├── SubjectNotSoftDeleted                404 40405
    ├── VersionSoftDeleted                   404 40406
    ├── VersionNotSoftDeleted                404 40407
    ├── SubjectConfigNotFound                404 40408
    ├── SubjectModeNotFound                  404 40409
    ├── IncompatibleSchema                   409 409
    ├── InvalidSchema                        422 42201
    ├── InvalidVersion                       422 42202
    ├── InvalidCompatibilityLevel            422 42203
    ├── InvalidMode                          422 42204
    ├── OperationNotPermitted                422 42205
    ├── ReferenceExists                      422 42206
    ├── Unauthorized                         401 40101
    ├── StoreError                           500 50001  (retriable: the Kafka log failed)
    └── SerdeSchemaError                     the serdes' errors: encoding, decoding, framing

The server answers each with ``{"error_code": ..., "message": ...}`` and ``http_status``,
as Confluent's registry does; the client raises the same classes from those bodies.
"""

from __future__ import annotations


class SchemaRegistryError(Exception):
    """Root of every error of the schema_registry package."""

    http_status = 500
    error_code = 50001
    retriable = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}


def _error(name: str, status: int, code: int, retriable: bool = False) -> type[SchemaRegistryError]:
    return type(
        name,
        (SchemaRegistryError,),
        {
            "http_status": status,
            "error_code": code,
            "retriable": retriable,
            "__module__": __name__,
            "__doc__": f"HTTP {status}, error code {code}.",
        },
    )


SubjectNotFound = _error("SubjectNotFound", 404, 40401)
VersionNotFound = _error("VersionNotFound", 404, 40402)
SchemaNotFound = _error("SchemaNotFound", 404, 40403)
SubjectSoftDeleted = _error("SubjectSoftDeleted", 404, 40404)
SubjectNotSoftDeleted = _error("SubjectNotSoftDeleted", 404, 40405)
VersionSoftDeleted = _error("VersionSoftDeleted", 404, 40406)
VersionNotSoftDeleted = _error("VersionNotSoftDeleted", 404, 40407)
SubjectConfigNotFound = _error("SubjectConfigNotFound", 404, 40408)
SubjectModeNotFound = _error("SubjectModeNotFound", 404, 40409)
IncompatibleSchema = _error("IncompatibleSchema", 409, 409)
InvalidSchema = _error("InvalidSchema", 422, 42201)
InvalidVersion = _error("InvalidVersion", 422, 42202)
InvalidCompatibilityLevel = _error("InvalidCompatibilityLevel", 422, 42203)
InvalidMode = _error("InvalidMode", 422, 42204)
OperationNotPermitted = _error("OperationNotPermitted", 422, 42205)
ReferenceExists = _error("ReferenceExists", 422, 42206)
Unauthorized = _error("Unauthorized", 401, 40101)
StoreError = _error("StoreError", 500, 50001, retriable=True)

BY_CODE: dict[int, type[SchemaRegistryError]] = {
    cls.error_code: cls
    for cls in (
        SubjectNotFound,
        VersionNotFound,
        SchemaNotFound,
        SubjectSoftDeleted,
        SubjectNotSoftDeleted,
        VersionSoftDeleted,
        VersionNotSoftDeleted,
        SubjectConfigNotFound,
        SubjectModeNotFound,
        IncompatibleSchema,
        InvalidSchema,
        InvalidVersion,
        InvalidCompatibilityLevel,
        InvalidMode,
        OperationNotPermitted,
        ReferenceExists,
        Unauthorized,
        StoreError,
    )
}


class SerdeSchemaError(SchemaRegistryError):
    """A value could not be encoded or decoded with its schema (or its framing is wrong)."""
