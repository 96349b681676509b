"""The users' SCRAM credentials: salt, iterations, StoredKey and ServerKey per user and mechanism.

Passwords are never kept: ``--user NAME:PASSWORD`` becomes a SCRAM-SHA-256 and a SCRAM-SHA-512
credential at start, SASL PLAIN checks a password against them, and AlterUserScramCredentials brings
(salt, salted password, iterations) that are turned into the same and dropped. The state file holds
the credentials too, so users altered at run time survive a restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from kcodec.errors import ErrorCode
from kcodec.protocol.sasl.scram import (DEFAULT_ITERATIONS, MAX_ITERATIONS, MECHANISM_IDS, MECHANISM_NAMES,
                                        MIN_ITERATIONS, ScramCredential)

SCRAM_MECHANISMS = tuple(MECHANISM_IDS)


@dataclass(frozen=True)
class Refusal:
    """One user's refusal in Describe/AlterUserScramCredentials: Kafka's error code and message."""

    code: ErrorCode
    message: str


class Credentials:
    """{user: {mechanism: ScramCredential}}; the callers hold the cluster's lock."""

    def __init__(self) -> None:
        self.users: dict[str, dict[str, ScramCredential]] = {}

    def __bool__(self) -> bool:
        return bool(self.users)

    def add_passwords(self, users: Mapping[str, str], iterations: int = DEFAULT_ITERATIONS) -> None:
        """Each user gets a fresh credential for both SCRAM mechanisms; the passwords are not kept."""
        for user, password in users.items():
            if not user:
                raise ValueError("a SASL user name must not be empty")
            self.users[user] = {m: ScramCredential.from_password(m, password, iterations) for m in SCRAM_MECHANISMS}

    def get(self, user: str, mechanism: str) -> Optional[ScramCredential]:
        return self.users.get(user, {}).get(mechanism)

    def check_password(self, user: str, password: str) -> bool:
        """SASL PLAIN: whether the password matches the user's credential (either mechanism)."""
        for mechanism, cred in self.users.get(user, {}).items():
            return cred.matches_password(mechanism, password)
        return False

    # -- DescribeUserScramCredentials / AlterUserScramCredentials, with Kafka's refusals --------------
    def describe(self, names: Optional[Iterable[str]]) -> list[tuple[str, Any]]:
        """[(user, [(mechanism id, iterations)] or Refusal)] for the named users, or every user."""
        if not names:
            return [(u, self._infos(u)) for u in sorted(self.users)]
        names = list(names)
        out: list[tuple[str, Any]] = []
        for name in dict.fromkeys(names):
            if names.count(name) > 1:
                out.append((name, Refusal(ErrorCode.DUPLICATE_RESOURCE,
                                          "Cannot describe SCRAM credentials for the same user twice in a single "
                                          "request")))
            elif name not in self.users:
                out.append((name, Refusal(ErrorCode.RESOURCE_NOT_FOUND,
                                          "Attempt to describe a user credential that does not exist")))
            else:
                out.append((name, self._infos(name)))
        return out

    def _infos(self, user: str) -> list[tuple[int, int]]:
        return [(MECHANISM_IDS[m], c.iterations) for m, c in sorted(self.users[user].items())]

    def alter(self, deletions: list[tuple[str, int]],
              upsertions: list[tuple[str, int, int, bytes, bytes]]) -> dict[str, Optional[Refusal]]:
        """Apply deletions (user, mechanism id) and upsertions (user, mechanism id, iterations, salt,
        salted password); {user: None (done) or Refusal}. A user with any refusal is left unchanged."""
        refused: dict[str, Refusal] = {}
        seen: dict[tuple[str, int], int] = {}
        users = [d[0] for d in deletions] + [u[0] for u in upsertions]
        for key in [(d[0], d[1]) for d in deletions] + [(u[0], u[1]) for u in upsertions]:
            seen[key] = seen.get(key, 0) + 1
        for (user, mech_id), count in seen.items():
            if count > 1:
                refused.setdefault(user, Refusal(ErrorCode.DUPLICATE_RESOURCE,
                                                 "A user credential cannot be altered twice in the same request"))
        for user, mech_id in deletions:
            refused.setdefault(user, self._check(user, mech_id) or self._absent(user, mech_id) or _NONE)
        for user, mech_id, iterations, salt, salted in upsertions:
            refusal = self._check(user, mech_id)
            if refusal is None and iterations < MIN_ITERATIONS:
                refusal = Refusal(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            if refusal is None and iterations > MAX_ITERATIONS:
                refusal = Refusal(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            if refusal is None and (not salt or not salted):
                refusal = Refusal(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty")
            refused.setdefault(user, refusal or _NONE)
        results: dict[str, Optional[Refusal]] = {}
        for user in dict.fromkeys(users):
            refusal = refused.get(user, _NONE)
            results[user] = None if refusal is _NONE else refusal
        for user, mech_id in deletions:
            if results[user] is None:
                self.users[user].pop(_name(mech_id), None)
                if not self.users[user]:
                    del self.users[user]
        for user, mech_id, iterations, salt, salted in upsertions:
            if results[user] is None:
                mechanism = _name(mech_id)
                cred = ScramCredential.from_salted_password(mechanism, salt, salted, iterations)
                self.users.setdefault(user, {})[mechanism] = cred
        return results

    def _check(self, user: str, mech_id: int) -> Optional[Refusal]:
        if not user:
            return Refusal(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        if mech_id not in MECHANISM_IDS.values():
            return Refusal(ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        return None

    def _absent(self, user: str, mech_id: int) -> Optional[Refusal]:
        if self.get(user, _name(mech_id)) is None:
            return Refusal(ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        return None

    # -- persistence ------------------------------------------------------------------------------
    def to_json(self) -> dict[str, dict[str, dict[str, object]]]:
        return {u: {m: c.to_json() for m, c in sorted(creds.items())} for u, creds in sorted(self.users.items())}

    def load_json(self, data: Mapping[str, Mapping[str, Mapping[str, object]]]) -> None:
        for user, creds in data.items():
            for mechanism, cred in creds.items():
                if mechanism not in SCRAM_MECHANISMS:
                    raise ValueError(f"unknown SCRAM mechanism {mechanism!r} for user {user!r}")
                self.users.setdefault(str(user), {})[mechanism] = ScramCredential.from_json(dict(cred))


_NONE = Refusal(ErrorCode.NONE, "")


def _name(mech_id: int) -> str:
    return MECHANISM_NAMES[mech_id]
