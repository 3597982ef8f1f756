"""The add-on's one error policy: what the user can fix is reported in one line by the operator and nothing is
made. The add-on's own checks raise VRAvatarError; core's errors are ValueErrors or OSErrors naming the file."""


class VRAvatarError(Exception):
    """Something the user can fix; its message becomes the operator's error report."""


USER_ERRORS = (VRAvatarError, ValueError, OSError)
"""What an operator reports as its one error line: the add-on's checks and every core error."""


def polled(cls, check, context, errors=(VRAvatarError,)) -> bool:
    """An operator's `poll` from the check its `execute` makes (`check(context)` raising one of `errors`): the
    button greys out and its tooltip gives the error's one line."""
    try:
        check(context)
    except errors as error:
        cls.poll_message_set(str(error))
        return False
    return True
