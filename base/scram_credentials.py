"""SCRAM credentials kept in the data dir, salted, never in clear.

One JSON file, ``security/scram-credentials.json`` (mode 0600), maps user -> mechanism
-> salt, iterations, StoredKey, ServerKey (base64). Every change rewrites it atomically
(write, fsync, rename), so a crash leaves the old or the new set, never a mix. The
broker and the offline ``headrace users --data-dir`` use this same class (hence its place
in base, below both); PLAIN checks a password by deriving the SCRAM credential from it
and comparing.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from headrace.base import write_atomically
from headrace.base.scram import (
    DEFAULT_ITERATIONS,
    ScramCredential,
    ScramMechanism,
    new_credential,
    unknown_user_salt,
)

FILE = Path("security") / "scram-credentials.json"


class CredentialStore:
    def __init__(self, path: Path, users: dict[str, dict[ScramMechanism, ScramCredential]]) -> None:
        self._path = path
        self._users = users

    @classmethod
    def open(cls, data_dir: Path) -> CredentialStore:
        path = data_dir / FILE
        users: dict[str, dict[ScramMechanism, ScramCredential]] = {}
        if path.exists():
            raw = json.loads(path.read_text())
            for user, mechanisms in raw.items():
                users[user] = {
                    ScramMechanism.named(name): ScramCredential(
                        salt=base64.b64decode(c["salt"]),
                        iterations=int(c["iterations"]),
                        stored_key=base64.b64decode(c["stored_key"]),
                        server_key=base64.b64decode(c["server_key"]),
                    )
                    for name, c in mechanisms.items()
                }
        return cls(path, users)

    def lookup(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def check_password(self, user: str, password: str) -> bool:
        """PLAIN's check: any of the user's SCRAM credentials derives from ``password``.

        A user with no credentials costs the same derivations as one with a credential
        per mechanism, so the time of a refusal does not tell whether the user exists."""
        credentials = self._users.get(user)
        if not credentials:
            for mechanism in ScramMechanism:
                decoy = ScramCredential(unknown_user_salt(user), DEFAULT_ITERATIONS, b"", b"")
                decoy.matches_password(mechanism, password)
            return False
        return any(c.matches_password(m, password) for m, c in credentials.items())

    def users(self) -> dict[str, list[tuple[ScramMechanism, int]]]:
        return {
            user: sorted(
                ((m, c.iterations) for m, c in mechs.items()), key=lambda item: item[0].protocol_id
            )
            for user, mechs in sorted(self._users.items())
        }

    def set_password(
        self, user: str, mechanism: ScramMechanism, password: str, iterations: int | None = None
    ) -> None:
        credential = (
            new_credential(mechanism, password)
            if iterations is None
            else new_credential(mechanism, password, iterations)
        )
        self.set_credential(user, mechanism, credential)

    def set_credential(
        self, user: str, mechanism: ScramMechanism, credential: ScramCredential
    ) -> None:
        if not user:
            raise ValueError("a user name cannot be empty")
        self._users.setdefault(user, {})[mechanism] = credential
        self._save()

    def delete(self, user: str, mechanism: ScramMechanism | None = None) -> bool:
        """Remove one mechanism's credential (or all of the user's); False if none was."""
        mechanisms = self._users.get(user)
        if not mechanisms:
            return False
        if mechanism is None:
            del self._users[user]
        else:
            if mechanisms.pop(mechanism, None) is None:
                return False
            if not mechanisms:
                del self._users[user]
        self._save()
        return True

    def _save(self) -> None:
        raw = {
            user: {
                m.kafka_name: {
                    "salt": _b64(c.salt),
                    "iterations": c.iterations,
                    "stored_key": _b64(c.stored_key),
                    "server_key": _b64(c.server_key),
                }
                for m, c in mechanisms.items()
            }
            for user, mechanisms in self._users.items()
        }
        self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the data dir
        write_atomically(self._path, json.dumps(raw, indent=1).encode(), mode=0o600)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
