"""The add-on's one error type for what the user can fix."""


class VRAvatarError(Exception):
    """Something the user can fix; its message becomes the operator's error report."""
