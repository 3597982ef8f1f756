"""OpenXR three-point source: a live headset and two controllers, read through pyopenxr into stream frames.

Three layers, so that all but the last are tested without a runtime:
- pose conversion: OpenXR poses (quaternion x, y, z, w, then position) and location flags into one
  stream frame, poses laid out as in the stream (position, then quaternion w, x, y, z);
- `SessionLifecycle`: the session state machine over plain states, deciding when to begin and end
  the session, when to run the frame loop, what to locate, and when to stop;
- `OpenXRSource`: the runtime boundary (instance, session, spaces, actions). pyopenxr (`xr`) is a
  development dependency, imported only here, when a source is opened.

OpenXR's world convention (+Y up, devices look along -Z, metres) is the stream's (SPEC §2), so no
axis changes; only the quaternion order differs.
"""
from __future__ import annotations

import enum
import time
from contextlib import contextmanager
from ctypes import POINTER, byref, cast
from dataclasses import dataclass

import numpy as np

from . import quat
from .plausibility import usable_samples
from .stream import DEVICES, ThreePointStream

NO_RUNTIME = ("no OpenXR runtime is installed or active: install and start one (SteamVR, Monado, "
              "Meta Quest Link...) and make it the active OpenXR runtime")

# XrSpaceLocationFlags and XrViewStateFlags share these bits.
ORIENTATION_VALID, POSITION_VALID, ORIENTATION_TRACKED, POSITION_TRACKED = 0x1, 0x2, 0x4, 0x8
# A device counts as tracked only when the runtime measures both halves of its pose: a pose that is
# valid but not tracked is the runtime's guess (the last known or an inferred one).
TRACKED_FLAGS = ORIENTATION_VALID | POSITION_VALID | ORIENTATION_TRACKED | POSITION_TRACKED

HANDS = ("/user/hand/left", "/user/hand/right")
# Interaction profiles given a suggested grip binding; the runtime picks the one for the controllers at hand.
PROFILES = ("/interaction_profiles/khr/simple_controller",
            "/interaction_profiles/oculus/touch_controller",
            "/interaction_profiles/valve/index_controller",
            "/interaction_profiles/htc/vive_controller")
# Preferred first: STAGE has its floor at y = 0, as the stream wants; LOCAL has it at the first head position.
REFERENCE_SPACES = ("STAGE", "LOCAL_FLOOR", "LOCAL")
IDLE_SLEEP_S = 0.01  # between polls while no frame loop runs


class OpenXRUnavailable(RuntimeError):
    """OpenXR cannot be used here; the message says what is missing (runtime, headset, pyopenxr, a GL window)."""


# --- pose conversion ----------------------------------------------------------------------------


def posef_array(pose) -> np.ndarray:
    """An XrPosef (pyopenxr structure) as an array (7,) in its own layout: qx, qy, qz, qw, px, py, pz."""
    return np.array([*pose.orientation, *pose.position], dtype=float)


def stream_poses(xr_poses: np.ndarray) -> np.ndarray:
    """OpenXR poses (..., 7) as XrPosef lays them out (qx, qy, qz, qw, px, py, pz) to stream poses (..., 7):
    (px, py, pz, qw, qx, qy, qz), quaternions renormalised (runtimes hand over float32)."""
    xr_poses = np.asarray(xr_poses, dtype=float)
    rotations = quat.normalize(xr_poses[..., [3, 0, 1, 2]])
    return np.concatenate([xr_poses[..., 4:7], rotations], axis=-1)


def is_tracked(flags) -> np.ndarray:
    """Location or view-state flags to tracked (bool, same shape): every valid and tracked bit set."""
    return (np.asarray(flags, dtype=np.int64) & TRACKED_FLAGS) == TRACKED_FLAGS


def head_from_eyes(eye_poses: np.ndarray) -> np.ndarray:
    """The view pose, centre between the eyes, from the eye views' stream poses (..., eyes, 7).

    Position: the mean of the eyes'. Orientation: their mean, which is either eye's on displays
    that face forward, and halfway between them on canted ones.
    """
    eye_poses = np.asarray(eye_poses, dtype=float)
    position = eye_poses[..., :3].mean(axis=-2)
    rotation = quat.mean(eye_poses[..., 3:], axis=-2)
    return np.concatenate([position, rotation], axis=-1)


@dataclass
class Frame:
    """One located sample: `time_ns` (runtime clock, XrTime), `positions` (3, 3), `rotations` (3, 4)
    as (w, x, y, z) and `tracked` (3,), devices in DEVICES order; untracked devices hold NaN."""

    time_ns: int
    positions: np.ndarray
    rotations: np.ndarray
    tracked: np.ndarray


def frame_from_poses(time_ns: int, poses: np.ndarray, flags) -> Frame:
    """A frame from stream poses (3, 7) of head, left and right grip and their location flags (3,)."""
    poses = np.array(poses, dtype=float)
    tracked = is_tracked(flags)
    if poses.shape != (len(DEVICES), 7) or tracked.shape != (len(DEVICES),):
        raise ValueError(f"a frame needs poses shaped (3, 7) and flags (3,), got {poses.shape} and {tracked.shape}")
    tracked = usable_samples(poses[:, :3], poses[:, 3:], tracked)  # the flags say tracked, the numbers must agree
    poses[~tracked] = np.nan
    return Frame(int(time_ns), poses[:, :3], poses[:, 3:], tracked)


def frames_to_stream(frames: list[Frame], rate: float | None = None) -> ThreePointStream:
    """Frames to a stream whose times start at 0 s; with `rate`, at most one frame per 1/rate tick.

    Thinning keeps the first frame in each tick of a grid from the first frame's time, so the mean
    rate is `rate` even when the runtime's rate is not a multiple of it.
    """
    if not frames:
        raise ValueError("no frames to make a stream of: nothing was tracked")
    times_ns = np.array([f.time_ns for f in frames], dtype=np.int64)
    keep = np.ones(len(frames), dtype=bool)
    keep[1:] = np.diff(times_ns) > 0  # a runtime may hand out the same display time twice
    if rate:
        ticks = ((times_ns - times_ns[0]) * rate // 1_000_000_000).astype(np.int64)
        keep[1:] &= np.diff(ticks) > 0
    kept = [f for f, k in zip(frames, keep) if k]
    return ThreePointStream((times_ns[keep] - times_ns[0]) * 1e-9,
                            np.stack([f.positions for f in kept]), np.stack([f.rotations for f in kept]),
                            np.stack([f.tracked for f in kept]))


# --- session state machine ----------------------------------------------------------------------


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
    """

    def __init__(self):
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
        return self.frame_loop and self.state in (SessionState.VISIBLE, SessionState.FOCUSED)

    @property
    def locates_hands(self) -> bool:
        return self.frame_loop and self.state == SessionState.FOCUSED


# --- runtime boundary ---------------------------------------------------------------------------


def import_xr():
    """pyopenxr's `xr` module, or OpenXRUnavailable saying how to install it."""
    try:
        import xr
    except ImportError as error:
        raise OpenXRUnavailable(f"pyopenxr is not installed ({error}): pip install pyopenxr") from None
    return xr


def runtime_extensions(xr) -> set[str]:
    """Names of the instance extensions the active runtime offers; OpenXRUnavailable when there is no runtime."""
    try:
        return {str(p) for p in xr.enumerate_instance_extension_properties()}
    except xr.RuntimeUnavailableError:
        raise OpenXRUnavailable(NO_RUNTIME) from None
    except xr.XrException as error:
        raise OpenXRUnavailable(f"the OpenXR runtime failed to load ({type(error).__name__}: {error}); "
                                "check that it is running") from None


class OpenXRSource:
    """A live OpenXR session reporting the head (view) and both grip poses; a context manager.

        with OpenXRSource() as source:
            while not source.finished:
                frame = source.poll()

    Headless (XR_MND_headless) where the runtime offers it, else with a hidden OpenGL window (glfw,
    PyOpenGL), since a session needs a graphics binding. Poses are located at each frame's
    predicted display time, in the reference space named by `reference_space`.
    """

    def __init__(self, application_name: str = "VR Avatar"):
        self._xr = import_xr()
        self.lifecycle = SessionLifecycle()
        self.headless = False
        self.reference_space: str | None = None
        self.profiles: list[str] = []  # interaction profiles the runtime accepted grip bindings for
        self.instance = self.session = self._graphics = self._blend_mode = None
        self._grips, self._action_set = [], None
        try:
            self._open(application_name)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "OpenXRSource":
        return self

    def __exit__(self, *exception) -> None:
        self.close()

    @property
    def finished(self) -> bool:
        return self.lifecycle.finished

    def _open(self, application_name: str) -> None:
        xr = self._xr
        offered = runtime_extensions(xr)
        self.headless = xr.MND_HEADLESS_EXTENSION_NAME in offered
        if not self.headless and xr.KHR_OPENGL_ENABLE_EXTENSION_NAME not in offered:
            raise OpenXRUnavailable("the OpenXR runtime offers neither XR_MND_headless nor XR_KHR_opengl_enable, "
                                    "so this source cannot open a session with it")
        enabled = [xr.MND_HEADLESS_EXTENSION_NAME if self.headless else xr.KHR_OPENGL_ENABLE_EXTENSION_NAME]
        if xr.EXT_LOCAL_FLOOR_EXTENSION_NAME in offered:
            enabled.append(xr.EXT_LOCAL_FLOOR_EXTENSION_NAME)
        with _step(xr, "creating the OpenXR instance"):
            self.instance = xr.create_instance(xr.InstanceCreateInfo(
                application_info=xr.ApplicationInfo(application_name=application_name, engine_name="vr-avatar core"),
                enabled_extension_names=enabled))
        with _step(xr, "finding the headset"):
            try:
                system = xr.get_system(self.instance, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
            except xr.FormFactorUnavailableError:
                raise OpenXRUnavailable("the OpenXR runtime is running but sees no headset: "
                                        "connect and switch it on") from None
        binding, self._blend_mode = None, xr.EnvironmentBlendMode.OPAQUE
        if not self.headless:
            self._graphics = _hidden_gl_window(xr, self.instance, system)
            binding = self._graphics.graphics_binding.pointer
            with _step(xr, "reading the environment blend modes"):
                self._blend_mode = xr.EnvironmentBlendMode(int(xr.enumerate_environment_blend_modes(
                    self.instance, system, xr.ViewConfigurationType.PRIMARY_STEREO)[0]))
        with _step(xr, "creating the session"):
            self.session = xr.create_session(self.instance, xr.SessionCreateInfo(system_id=system, next=binding))
        with _step(xr, "creating the reference spaces"):
            offered_spaces = {int(s) for s in xr.enumerate_reference_spaces(self.session)}
            # LOCAL is always offered
            self.reference_space = next(n for n in REFERENCE_SPACES
                                        if getattr(xr.ReferenceSpaceType, n) in offered_spaces)
            self._base = self._reference(getattr(xr.ReferenceSpaceType, self.reference_space))
            self._view = self._reference(xr.ReferenceSpaceType.VIEW)
        with _step(xr, "creating the grip pose actions"):
            self._create_grip_actions()

    def _reference(self, kind):
        xr = self._xr
        return xr.create_reference_space(self.session, xr.ReferenceSpaceCreateInfo(reference_space_type=kind))

    def _create_grip_actions(self) -> None:
        xr = self._xr
        self._action_set = xr.create_action_set(self.instance, xr.ActionSetCreateInfo(
            action_set_name="three_point", localized_action_set_name="Three-point tracking", priority=0))
        hands = [xr.string_to_path(self.instance, h) for h in HANDS]
        grip = xr.create_action(self._action_set, xr.ActionCreateInfo(
            action_name="grip_pose", action_type=xr.ActionType.POSE_INPUT, subaction_paths=hands,
            localized_action_name="Grip pose"))
        for profile in PROFILES:
            bindings = [xr.ActionSuggestedBinding(grip, xr.string_to_path(self.instance, f"{h}/input/grip/pose"))
                        for h in HANDS]
            try:
                xr.suggest_interaction_profile_bindings(self.instance, xr.InteractionProfileSuggestedBinding(
                    interaction_profile=xr.string_to_path(self.instance, profile), suggested_bindings=bindings))
            except (xr.PathUnsupportedError, xr.PathInvalidError):
                continue  # a runtime may not know every profile
            self.profiles.append(profile)
        for hand in hands:
            self._grips.append(xr.create_action_space(self.session, xr.ActionSpaceCreateInfo(
                action=grip, subaction_path=hand)))
        xr.attach_session_action_sets(self.session, xr.SessionActionSetsAttachInfo(action_sets=[self._action_set]))

    def poll(self) -> Frame | None:
        """Handle pending events, then run one frame: the located frame, or None when nothing was located.

        Blocks until the runtime's next frame while the frame loop runs (xrWaitFrame paces it).
        """
        xr = self._xr
        try:
            self._handle_events()
            if not self.lifecycle.frame_loop:
                time.sleep(IDLE_SLEEP_S)
                return None
            frame_state = xr.wait_frame(self.session)
            try:
                xr.begin_frame(self.session)
            except xr.FrameDiscarded:
                pass  # the previous frame was never ended; this one goes on
            display_time = frame_state.predicted_display_time
            try:
                return self._locate(display_time) if self.lifecycle.locates_head else None
            finally:
                xr.end_frame(self.session, xr.FrameEndInfo(
                    display_time=display_time, environment_blend_mode=self._blend_mode, layers=None))
        except xr.SessionLossPending:
            self.lifecycle.on_lost("session")
        except (xr.SessionLostError, xr.InstanceLostError) as error:
            self.lifecycle.on_lost("session" if isinstance(error, xr.SessionLostError) else "OpenXR instance")
        return None

    def _handle_events(self) -> None:
        xr = self._xr
        while True:
            try:
                event = xr.poll_event(self.instance)
            except xr.EventUnavailable:
                return
            kind = xr.StructureType(event.type)
            if kind == xr.StructureType.EVENT_DATA_INSTANCE_LOSS_PENDING:
                loss = _cast(event, xr.EventDataInstanceLossPending)
                self.lifecycle.on_instance_loss_pending(loss.loss_time)
            elif kind == xr.StructureType.EVENT_DATA_SESSION_STATE_CHANGED:
                change = _cast(event, xr.EventDataSessionStateChanged)
                self._call(self.lifecycle.on_state_changed(int(change.state), change.time))

    def _call(self, call: SessionCall) -> None:
        xr = self._xr
        if call == SessionCall.BEGIN:
            xr.begin_session(self.session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))
        elif call == SessionCall.END:
            xr.end_session(self.session)
        elif call == SessionCall.REQUEST_EXIT:
            xr.request_exit_session(self.session)

    def _locate(self, display_time: int) -> Frame:
        """Head and grips at `display_time`; the grips only while focused (the runtime withholds input otherwise)."""
        xr = self._xr
        if self.headless:  # no view configuration runs in a headless session: the VIEW space is the eyes' centre
            view = xr.locate_space(self._view, self._base, display_time)
            head, head_flags = stream_poses(posef_array(view.pose)), int(view.location_flags)
        else:
            view_state, views = xr.locate_views(self.session, xr.ViewLocateInfo(
                view_configuration_type=xr.ViewConfigurationType.PRIMARY_STEREO, display_time=display_time,
                space=self._base))
            head = head_from_eyes(stream_poses(np.array([posef_array(v.pose) for v in views])))
            head_flags = int(view_state.view_state_flags)
        poses, flags = np.full((3, 7), np.nan), [head_flags, 0, 0]
        poses[0] = head
        if self.lifecycle.locates_hands and self._sync_actions():
            for i, grip in enumerate(self._grips, start=1):
                location = xr.locate_space(grip, self._base, display_time)
                poses[i], flags[i] = stream_poses(posef_array(location.pose)), int(location.location_flags)
        return frame_from_poses(display_time, poses, flags)

    def _sync_actions(self) -> bool:
        xr = self._xr
        try:
            xr.sync_actions(self.session, xr.ActionsSyncInfo(
                active_action_sets=[xr.ActiveActionSet(self._action_set, xr.NULL_PATH)]))
        except xr.SessionNotFocused:
            return False
        return True

    def close(self, timeout_s: float = 1.0) -> None:
        """Wind the session down (request exit, end it when the runtime says STOPPING), then destroy everything.

        Waits up to `timeout_s` for the runtime; a session still running then is destroyed as it is.
        """
        xr = self._xr
        if self.session is not None and not self.lifecycle.finished:
            try:
                self._call(self.lifecycle.request_stop())
                deadline = time.monotonic() + timeout_s
                while self.lifecycle.running and time.monotonic() < deadline:
                    self.poll()  # keeps the frame loop going, as the runtime expects until STOPPING
            except xr.XrException:
                pass  # shutting down regardless
        if self.session is not None:
            _quietly(xr, xr.destroy_session, self.session)  # its spaces go with it
            self.session, self._grips = None, []
        if self._graphics is not None:
            self._graphics.destroy()
            self._graphics = None
        if self.instance is not None:
            _quietly(xr, xr.destroy_instance, self.instance)  # and the action set with it
            self.instance, self._action_set = None, None


def record(seconds: float, rate: float | None = None, wait_s: float = 30.0) -> tuple[ThreePointStream, str]:
    """Record `seconds` from the first located frame (Ctrl+C ends early); the stream and its reference space.

    Waits up to `wait_s` for the session to become visible (the headset put on, the runtime ready).
    """
    frames = []
    with OpenXRSource() as source:
        start, first = time.monotonic(), None
        try:
            while not source.finished:
                elapsed = time.monotonic() - (start if first is None else first)
                if elapsed > (wait_s if first is None else seconds):
                    break
                frame = source.poll()
                if frame is not None:
                    first = time.monotonic() if first is None else first
                    frames.append(frame)
        except KeyboardInterrupt:
            pass
        if not frames:
            raise OpenXRUnavailable(f"no frame was located within {wait_s:g} s "
                                    f"({source.lifecycle.stop_reason or 'the session never became visible'}): "
                                    "is the headset on and the runtime showing this application?")
        return frames_to_stream(frames, rate), source.reference_space


@contextmanager
def _step(xr, what: str):
    """Turns an OpenXR error while doing `what` into OpenXRUnavailable naming the step."""
    try:
        yield
    except xr.XrException as error:
        raise OpenXRUnavailable(f"{what} failed: {type(error).__name__}: {error}") from None


def _hidden_gl_window(xr, instance, system):
    """pyopenxr's OpenGL graphics on a hidden 1x1 glfw window, for runtimes without XR_MND_headless."""
    need = "the OpenXR runtime has no XR_MND_headless, so the session needs a hidden OpenGL window"
    try:
        from xr.utils.gl import OpenGLGraphics
        from xr.utils.gl.glfw_util import GLFWOffscreenContextProvider
    except (ImportError, OSError) as error:
        raise OpenXRUnavailable(f"{need}, but glfw or PyOpenGL cannot be loaded ({error}): "
                                "pip install glfw PyOpenGL") from None
    try:
        window = GLFWOffscreenContextProvider()
    except RuntimeError as error:
        raise OpenXRUnavailable(f"{need}, and none could be made ({error}): is there a display?") from None
    try:
        return OpenGLGraphics(instance, system, window)
    except xr.XrException as error:
        window.destroy()
        raise OpenXRUnavailable(f"{need}: the runtime refused its OpenGL requirements query "
                                f"({type(error).__name__}: {error})") from None


def _cast(event, structure):
    return cast(byref(event), POINTER(structure)).contents


def _quietly(xr, destroy, handle) -> None:
    try:
        destroy(handle)
    except xr.XrException:
        pass  # a lost instance takes its handles with it
