"""Errors a user can act on. The CLI prints their message (which names the file, line, key
or device and says what to do) and exits with status 2, without a traceback."""


class UserError(Exception):
    """Bad input or an unsafe request; the message is for the user."""


class ProfileError(UserError):
    """A bad profile file, key or value."""


class DriveFullError(ProfileError):
    """A simulated drive ran out of room during a run: a plane filled with valid data so that
    garbage collection could free nothing. The profile's spare area is too small for the
    workload; the message says which profile key to change. args = (message, key)."""

    def __init__(self, message: str, key: str = ""):
        super().__init__(message, key)
        self.key = key

    def __str__(self) -> str:
        return str(self.args[0])


class WorkloadKeyError(UserError, ValueError):
    """A workload key the simulated drive refuses (the message names the key); a ValueError
    too, as the simulator's own refusal is."""
