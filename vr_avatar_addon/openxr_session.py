"""The add-on's one OpenXR source: the OpenXR loader allows one instance a process, so *Live Preview (OpenXR)* and
*Record OpenXR* share it. The first to start opens it, the last to stop closes it, and each reads every frame the
runtime located since its own last read, whoever polled it."""
from . import core
from .errors import VRAvatarError


class SharedOpenXR:
    """One user's handle on the shared source. VRAvatarError where no source can be opened."""

    _source = None
    """The open source, while any handle holds it."""
    _users: list = []
    _frames: list = []
    """(number, frame) of the frames polled that some handle has not read yet."""
    _polled = 0
    """How many frames have been polled since the source was opened."""

    def __init__(self):
        shared = SharedOpenXR
        if shared._source is None:
            try:
                shared._source = core.devices.openxr_source.OpenXRSource()
            except core.devices.openxr_source.OpenXRUnavailable as error:
                raise VRAvatarError(str(error)) from None
            shared._frames, shared._polled = [], 0
        self.source = shared._source
        self.read = shared._polled
        shared._users.append(self)

    @property
    def finished(self) -> bool:
        return self.source.finished

    @property
    def lifecycle(self):
        return self.source.lifecycle

    @property
    def reference_space(self) -> str | None:
        return self.source.reference_space

    @property
    def closed(self) -> bool:
        """Whether the source this handle read is closed (by its last user)."""
        return self.source.instance is None

    def frames(self) -> list:
        """The frames located since this handle's last read, the runtime polled once now."""
        shared = SharedOpenXR
        if self not in shared._users:
            return []
        frame = None if self.source.finished else self.source.poll()
        if frame is not None:
            shared._polled += 1
            shared._frames.append((shared._polled, frame))
        new = [f for number, f in shared._frames if number > self.read]
        self.read = shared._polled
        oldest = min(user.read for user in shared._users)
        shared._frames = [(number, f) for number, f in shared._frames if number > oldest]
        return new

    def close(self) -> None:
        """Let go of the source; the last handle closes it."""
        shared = SharedOpenXR
        if self in shared._users:
            shared._users.remove(self)
            if not shared._users:
                shared._source, shared._frames = None, []
                self.source.close()
