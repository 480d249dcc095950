"""The rounds journal: what a PTS run has finished, step by step, so that ``--resume``
continues from the last finished round.

``pts_journal.json`` in the results folder holds the run's identity (target, capacity, the
parameters that shape the phases) and per test its finished steps (purge, WIPC, each round,
each access group...) with their figures. It is rewritten atomically (a temporary file, then
a rename) after every step, so a run killed at any moment leaves the last finished step.
"""
from __future__ import annotations

import json
from pathlib import Path

from .. import results
from ..errors import UserError

NAME = "pts_journal.json"
VERSION = 1


class Journal:
    def __init__(self, path: Path, identity: dict, data: dict | None = None):
        self.path = Path(path)
        self.identity = identity
        self.data = data if data is not None else {"version": VERSION, "identity": identity, "tests": {}}

    @classmethod
    def start(cls, folder: Path, identity: dict, resume: bool) -> "Journal":
        """A new journal, or with ``resume`` the folder's, checked to belong to the same target
        and phases (a :class:`UserError` naming ``--resume`` otherwise)."""
        path = Path(folder) / NAME
        if not resume:
            j = cls(path, identity)
            j.save()
            return j
        if not path.exists():
            raise UserError(f"--resume: {path} does not exist; start the run without --resume")
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise UserError(f"--resume: cannot read {path}: {e}") from None
        old = data.get("identity") or {}
        diff = sorted(k for k in set(old) | set(identity) if old.get(k) != identity.get(k))
        if diff:
            what = ", ".join(f"{k}: {old.get(k)!r} then, {identity.get(k)!r} now" for k in diff)
            raise UserError(f"--resume: the run in {folder} was made with other settings ({what}); resume with "
                            f"the same target and options, or start a new run")
        return cls(path, identity, data)

    def test(self, name: str) -> dict:
        return self.data["tests"].setdefault(name, {"steps": {}, "done": False})

    def get(self, test: str, key: str):
        return self.test(test)["steps"].get(key)

    def put(self, test: str, key: str, record) -> None:
        self.test(test)["steps"][key] = record
        self.save()

    def finish(self, test: str) -> None:
        self.test(test)["done"] = True
        self.save()

    def steps(self, test: str) -> int:
        return len(self.test(test)["steps"])

    def save(self) -> None:
        text = json.dumps(results.to_jsonable(self.data), indent=1, allow_nan=True)
        results.atomic_write(self.path, lambda f: f.write(text.encode()))
