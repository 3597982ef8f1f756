"""The OpenXR session state machine over plain states: when to begin and end the session, when to
run the frame loop, what to locate, when to stop, and what to tell a headset user about it."""
from __future__ import annotations

import enum


class SessionState(enum.IntEnum):
    """XrSessionState, by value."""

    UNKNOWN = 0
    IDLE = 1
    READY = 2
    SYNCHRONIZED = 3
    VISIBLE = 4
    FOCUSED = 5
    STOPPING = 6
    LOSS_PENDING = 7
    EXITING = 8


class SessionCall(enum.Enum):
    """The OpenXR call a state change asks for."""

    NONE = "none"
    BEGIN = "xrBeginSession"
    END = "xrEndSession"
    REQUEST_EXIT = "xrRequestExitSession"


FRAME_LOOP_STATES = (SessionState.READY, SessionState.SYNCHRONIZED, SessionState.VISIBLE, SessionState.FOCUSED)


class SessionLifecycle:
    """What to do as the runtime moves a session through its states (OpenXR §9.3), over plain values.

    Feed it each XrEventDataSessionStateChanged as (state, time) and each instance loss; it answers
    the call to make and says whether to run the frame loop (READY to FOCUSED while running),
    locate the head (VISIBLE or FOCUSED: the user sees the application) and the hands (FOCUSED:
    only then does the runtime give the application input). `stop_reason` is set once the source
    must stop.

    A `headless` session (XR_MND_headless) shows nothing, so the runtime leaves it READY: it locates
    head and hands in every running state, the location flags alone saying what is tracked.
    """

    def __init__(self, headless: bool = False):
        self.headless = headless
        self.state = SessionState.IDLE  # a new session starts idle
        self.running = False  # between xrBeginSession and xrEndSession
        self.stop_reason: str | None = None
        self.history: list[tuple[SessionState, int]] = []

    def on_state_changed(self, state: int, time_ns: int) -> SessionCall:
        self.state = SessionState(state)
        self.history.append((self.state, int(time_ns)))
        if self.state == SessionState.READY and not self.running:
            self.running = True
            return SessionCall.BEGIN
        if self.state == SessionState.STOPPING and self.running:
            self.running = False
            return SessionCall.END
        if self.state == SessionState.EXITING:
            self._stop("the session exited")
        elif self.state == SessionState.LOSS_PENDING:
            self._stop("the session is being lost (headset disconnected or runtime stopping)")
        return SessionCall.NONE

    def on_instance_loss_pending(self, time_ns: int) -> None:
        self._stop("the OpenXR runtime is going away (instance loss pending)")

    def on_lost(self, what: str) -> None:
        """The runtime reported the session or instance lost on a call; nothing more can be called."""
        self.running = False
        self._stop(f"the {what} was lost")

    def on_failed(self, error: str) -> None:
        """The runtime answered a call with an error (it failed or went away); nothing more can be called."""
        self.running = False
        self._stop(f"the OpenXR runtime failed ({error})")

    def request_stop(self) -> SessionCall:
        """The application wants to stop: ask the runtime to wind a running session down, else stop now."""
        if self.running and self.stop_reason is None:
            return SessionCall.REQUEST_EXIT
        self._stop("stopped by the application")
        return SessionCall.NONE

    def _stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason

    @property
    def finished(self) -> bool:
        return self.stop_reason is not None

    @property
    def frame_loop(self) -> bool:
        return self.running and not self.finished and self.state in FRAME_LOOP_STATES

    @property
    def locates_head(self) -> bool:
        return self.frame_loop and (self.headless or self.state in (SessionState.VISIBLE, SessionState.FOCUSED))

    @property
    def locates_hands(self) -> bool:
        return self.frame_loop and (self.headless or self.state == SessionState.FOCUSED)


def tracking_status(lifecycle: SessionLifecycle, tracked=None) -> str | None:
    """What a headset user needs to hear about the session and the last frame's tracked (3,); None: all is well."""
    if lifecycle.finished:
        return f"the OpenXR session stopped: {lifecycle.stop_reason}"
    if not lifecycle.frame_loop:
        return "waiting for the OpenXR runtime to start the session (is the headset connected and on?)"
    if not lifecycle.locates_head:
        return ("the headset is asleep or not being worn (session not visible): put it on, "
                "or wake it with its power button")
    if not lifecycle.locates_hands:
        return ("the runtime is not giving this application input (session not focused: a system menu or "
                "another application has it); the hands are held where they were last seen")
    if tracked is None:
        return None
    if not tracked[0]:
        return "the headset is not tracked: check its tracking (lighting, base stations, guardian)"
    lost = [side for side, seen in zip(("left", "right"), tracked[1:]) if not seen]
    if lost:
        return (f"the {' and '.join(lost)} controller{'s are' if len(lost) == 2 else ' is'} off or not tracked: "
                "switch on and hold in view; the avatar holds the hand until then")
    return None
