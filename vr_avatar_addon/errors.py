"""The add-on's one error type for what the user can fix."""


class VRAvatarError(Exception):
    """Something the user can fix; its message becomes the operator's error report."""


def polled(cls, check, context, errors=(VRAvatarError,)) -> bool:
    """An operator's `poll` from the check its `execute` makes (`check(context)` raising one of `errors`): the
    button greys out and its tooltip gives the error's one line."""
    try:
        check(context)
    except errors as error:
        cls.poll_message_set(str(error))
        return False
    return True
