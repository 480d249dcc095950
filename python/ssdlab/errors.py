"""Errors a user can act on. The CLI prints their message (which names the file, line, key
or device and says what to do) and exits with status 2, without a traceback."""


class UserError(Exception):
    """Bad input or an unsafe request; the message is for the user."""


class ProfileError(UserError):
    """A bad profile file, key or value."""
