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
from ctypes import POINTER, byref, c_void_p, cast
from dataclasses import dataclass

import numpy as np

from ..errors import DeviceUnavailable
from ..files.stream import DEVICES, ThreePointStream
from ..math import quat
from .plausibility import usable_samples

NO_RUNTIME = ("no OpenXR runtime is installed or active: install and start one (SteamVR, Monado, "
              "Meta Quest Link...) and make it the active OpenXR runtime")

# XrSpaceLocationFlags and XrViewStateFlags share these bits.
ORIENTATION_VALID, POSITION_VALID, ORIENTATION_TRACKED, POSITION_TRACKED = 0x1, 0x2, 0x4, 0x8
# A controller counts as tracked only when the runtime measures both halves of its pose: a hand pose
# that is valid but not tracked is the runtime's guess (often the last known position, frozen in the air).
TRACKED_FLAGS = ORIENTATION_VALID | POSITION_VALID | ORIENTATION_TRACKED | POSITION_TRACKED
# The head counts as tracked with a measured orientation and a valid position, measured or inferred:
# headsets infer position from their inertial sensors through short optical dropouts (and 3-DoF
# headsets from a neck model), which keeps the avatar standing where losing the head would stop it.
HEAD_FLAGS = ORIENTATION_VALID | POSITION_VALID | ORIENTATION_TRACKED

HANDS = ("/user/hand/left", "/user/hand/right")
# Interaction profiles given a suggested grip binding, with the instance extension each needs (None: core
# OpenXR); the runtime picks the one for the controllers at hand. Profiles whose extension the runtime
# lacks are left out.
PROFILES = {"/interaction_profiles/khr/simple_controller": None,
            "/interaction_profiles/oculus/touch_controller": None,
            "/interaction_profiles/valve/index_controller": None,
            "/interaction_profiles/htc/vive_controller": None,
            "/interaction_profiles/microsoft/motion_controller": None,
            "/interaction_profiles/hp/mixed_reality_controller": "XR_EXT_hp_mixed_reality_controller",
            "/interaction_profiles/samsung/odyssey_controller": "XR_EXT_samsung_odyssey_controller",
            "/interaction_profiles/ml/ml2_controller": "XR_ML_ml2_controller_interaction"}
# Preferred first: STAGE has its floor at y = 0, as the stream wants; LOCAL has it at the first head position.
REFERENCE_SPACES = ("STAGE", "LOCAL_FLOOR", "LOCAL")
GRAPHICS = ("auto", "headless", "vulkan", "opengl")
IDLE_SLEEP_S = 0.01  # between polls while no frame loop runs
HEADLESS_RATE_HZ = 90.0  # a headless session has no display to pace it: the source samples at a headset's rate


class OpenXRUnavailable(DeviceUnavailable):
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


def devices_tracked(flags) -> np.ndarray:
    """The head's, left and right grip's flags (3,) to the stream's `*_valid` (3,): HEAD_FLAGS for the head,
    every bit (TRACKED_FLAGS) for the controllers."""
    flags = np.asarray(flags, dtype=np.int64)
    return (flags & [HEAD_FLAGS, TRACKED_FLAGS, TRACKED_FLAGS]) == [HEAD_FLAGS, TRACKED_FLAGS, TRACKED_FLAGS]


def pick_reference_space(offered, preferred=REFERENCE_SPACES) -> str:
    """The first of `preferred` that the runtime offers (names of XrReferenceSpaceType); LOCAL, which every
    runtime offers, when none is."""
    return next((name for name in preferred if name in offered), "LOCAL")


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
    as (w, x, y, z) and `tracked` (3,), devices in DEVICES order; untracked devices hold NaN.
    `flags` (3,) are the runtime's location flags; `located_s` is `time.perf_counter()` just before
    the first locate call (latency is measured from it)."""

    time_ns: int
    positions: np.ndarray
    rotations: np.ndarray
    tracked: np.ndarray
    flags: np.ndarray | None = None
    located_s: float = 0.0


def frame_from_poses(time_ns: int, poses: np.ndarray, flags, located_s: float = 0.0) -> Frame:
    """A frame from stream poses (3, 7) of head, left and right grip and their location flags (3,).

    A device is tracked as `devices_tracked` says and only with a finite pose: a runtime handing
    over NaN or infinity with its flags set is not believed.
    """
    poses = np.array(poses, dtype=float)
    flags = np.asarray(flags, dtype=np.int64)
    if poses.shape != (len(DEVICES), 7) or flags.shape != (len(DEVICES),):
        raise ValueError(f"a frame needs poses shaped (3, 7) and flags (3,), got {poses.shape} and {flags.shape}")
    tracked = usable_samples(poses[:, :3], poses[:, 3:], devices_tracked(flags))  # the flags and the numbers agree
    poses[~tracked] = np.nan
    return Frame(int(time_ns), poses[:, :3], poses[:, 3:], tracked, flags, located_s)


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

    `graphics` picks how the session is made ("auto": the first that the runtime offers):
    - "headless" (XR_MND_headless, Monado): no display; the source samples at HEADLESS_RATE_HZ on
      the runtime's clock (XR_KHR_convert_timespec_time), since no frame loop paces it;
    - "vulkan" (XR_KHR_vulkan_enable): a bare Vulkan device (core.vulkan_device) and the full frame
      loop, paced by the runtime's xrWaitFrame, submitting empty frames;
    - "opengl" (XR_KHR_opengl_enable): the same on a hidden glfw window.
    Poses are located at each frame's predicted display time (headless: the present) in the first
    of `reference_spaces` the runtime offers.
    """

    def __init__(self, application_name: str = "VR Avatar", graphics: str = "auto",
                 reference_spaces: tuple[str, ...] = REFERENCE_SPACES):
        if graphics not in GRAPHICS:
            raise ValueError(f"graphics must be one of {', '.join(GRAPHICS)}, not {graphics!r}")
        self._xr = import_xr()
        self.graphics = graphics
        self.reference_space: str | None = None
        self.offered_spaces: list[str] = []
        self.profiles: list[str] = []  # interaction profiles the runtime accepted grip bindings for
        self.instance = self.session = self._graphics = self._blend_mode = self._system = None
        self._grips, self._hands, self._action_set = [], [], None
        self._sync_info = self._to_runtime_time = None
        self._locations = [None, None, None]  # one XrSpaceLocation per device, filled in place every frame
        self._next_tick = 0.0
        try:
            self._open(application_name, reference_spaces)
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

    @property
    def headless(self) -> bool:
        return self.graphics == "headless"

    def _choose_graphics(self, offered: set[str]) -> str:
        xr = self._xr
        needs = {"headless": [xr.MND_HEADLESS_EXTENSION_NAME, xr.KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME],
                 "vulkan": [xr.KHR_VULKAN_ENABLE_EXTENSION_NAME], "opengl": [xr.KHR_OPENGL_ENABLE_EXTENSION_NAME]}
        usable = [kind for kind, extensions in needs.items() if offered.issuperset(extensions)]
        if self.graphics == "auto":
            if not usable:
                raise OpenXRUnavailable("the OpenXR runtime offers none of XR_MND_headless, XR_KHR_vulkan_enable "
                                        "and XR_KHR_opengl_enable, so this source cannot open a session with it")
            return usable[0]
        if self.graphics not in usable:
            raise OpenXRUnavailable(f"the OpenXR runtime does not offer {' and '.join(needs[self.graphics])}, "
                                    f"which a {self.graphics} session needs")
        return self.graphics

    def _open(self, application_name: str, reference_spaces) -> None:
        xr = self._xr
        offered = runtime_extensions(xr)
        self.graphics = self._choose_graphics(offered)
        self.lifecycle = SessionLifecycle(headless=self.headless)
        enabled = {"headless": [xr.MND_HEADLESS_EXTENSION_NAME, xr.KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME],
                   "vulkan": [xr.KHR_VULKAN_ENABLE_EXTENSION_NAME],
                   "opengl": [xr.KHR_OPENGL_ENABLE_EXTENSION_NAME]}[self.graphics]
        enabled += [e for e in [xr.EXT_LOCAL_FLOOR_EXTENSION_NAME, *filter(None, PROFILES.values())] if e in offered]
        with _step(xr, "creating the OpenXR instance"):
            self.instance = xr.create_instance(xr.InstanceCreateInfo(
                application_info=xr.ApplicationInfo(application_name=application_name, engine_name="vr-avatar core"),
                enabled_extension_names=enabled))
        with _step(xr, "finding the headset"):
            try:
                self._system = xr.get_system(self.instance, xr.SystemGetInfo(
                    form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
            except xr.FormFactorUnavailableError:
                raise OpenXRUnavailable("the OpenXR runtime is running but sees no headset: "
                                        "connect and switch it on") from None
        binding, self._blend_mode = None, xr.EnvironmentBlendMode.OPAQUE
        if not self.headless:
            if self.graphics == "vulkan":
                self._graphics = _vulkan_device(xr, self.instance, self._system)
                handle = dict(xr.GraphicsBindingVulkanKHR._fields_)
                self._binding = xr.GraphicsBindingVulkanKHR(
                    instance=cast(c_void_p(self._graphics.instance), handle["instance"]),
                    physical_device=cast(c_void_p(self._graphics.physical_device), handle["physical_device"]),
                    device=cast(c_void_p(self._graphics.device), handle["device"]),
                    queue_family_index=self._graphics.queue_family, queue_index=0)
                binding = cast(byref(self._binding), c_void_p)
            else:
                self._graphics = _hidden_gl_window(xr, self.instance, self._system)
                binding = self._graphics.graphics_binding.pointer
            with _step(xr, "reading the environment blend modes"):
                self._blend_mode = xr.EnvironmentBlendMode(int(xr.enumerate_environment_blend_modes(
                    self.instance, self._system, xr.ViewConfigurationType.PRIMARY_STEREO)[0]))
        with _step(xr, "creating the session"):
            self.session = xr.create_session(self.instance, xr.SessionCreateInfo(system_id=self._system, next=binding))
        with _step(xr, "creating the reference spaces"):
            self.offered_spaces = [xr.ReferenceSpaceType(int(s)).name for s in xr.enumerate_reference_spaces(self.session)]
            self.reference_space = pick_reference_space(self.offered_spaces, reference_spaces)
            self._base = self._reference(getattr(xr.ReferenceSpaceType, self.reference_space))
            self._view = self._reference(xr.ReferenceSpaceType.VIEW)
        with _step(xr, "creating the grip pose actions"):
            self._create_grip_actions(offered)
        self._locations = [xr.SpaceLocation() for _ in DEVICES]
        if self.headless:
            self._to_runtime_time = cast(xr.get_instance_proc_addr(self.instance, "xrConvertTimespecTimeToTimeKHR"),
                                         xr.PFN_xrConvertTimespecTimeToTimeKHR)

    def _reference(self, kind):
        xr = self._xr
        return xr.create_reference_space(self.session, xr.ReferenceSpaceCreateInfo(reference_space_type=kind))

    def _create_grip_actions(self, offered: set[str]) -> None:
        xr = self._xr
        self._action_set = xr.create_action_set(self.instance, xr.ActionSetCreateInfo(
            action_set_name="three_point", localized_action_set_name="Three-point tracking", priority=0))
        self._hands = [xr.string_to_path(self.instance, h) for h in HANDS]
        grip = xr.create_action(self._action_set, xr.ActionCreateInfo(
            action_name="grip_pose", action_type=xr.ActionType.POSE_INPUT, subaction_paths=self._hands,
            localized_action_name="Grip pose"))
        for profile, extension in PROFILES.items():
            if extension is not None and extension not in offered:
                continue
            bindings = [xr.ActionSuggestedBinding(grip, xr.string_to_path(self.instance, f"{h}/input/grip/pose"))
                        for h in HANDS]
            try:
                xr.suggest_interaction_profile_bindings(self.instance, xr.InteractionProfileSuggestedBinding(
                    interaction_profile=xr.string_to_path(self.instance, profile), suggested_bindings=bindings))
            except (xr.PathUnsupportedError, xr.PathInvalidError):
                continue  # a runtime may not know every profile
            self.profiles.append(profile)
        for hand in self._hands:
            self._grips.append(xr.create_action_space(self.session, xr.ActionSpaceCreateInfo(
                action=grip, subaction_path=hand)))
        xr.attach_session_action_sets(self.session, xr.SessionActionSetsAttachInfo(action_sets=[self._action_set]))
        self._sync_info = xr.ActionsSyncInfo(active_action_sets=[xr.ActiveActionSet(self._action_set, xr.NULL_PATH)])

    def current_profiles(self) -> list[str | None]:
        """The interaction profile the runtime bound to each hand (left, right): a path, or None for none."""
        xr = self._xr
        paths = [xr.get_current_interaction_profile(self.session, hand).interaction_profile for hand in self._hands]
        return [xr.path_to_string(self.instance, p) if p != xr.NULL_PATH else None for p in paths]

    def now(self) -> int:
        """The runtime's clock now (XrTime, ns); headless sessions only (XR_KHR_convert_timespec_time)."""
        xr = self._xr
        seconds, nanoseconds = divmod(time.clock_gettime_ns(time.CLOCK_MONOTONIC), 1_000_000_000)
        now = xr.Time()
        _checked(xr, self._to_runtime_time(self.instance, xr.timespec(seconds, nanoseconds), byref(now)))
        return int(now.value)

    def poll(self) -> Frame | None:
        """Handle pending events, then run one frame: the located frame, or None when nothing was located.

        Blocks until the runtime's next frame while the frame loop runs (xrWaitFrame paces it;
        headless, the source's own HEADLESS_RATE_HZ does).
        """
        xr = self._xr
        try:
            self._handle_events()
            if not self.lifecycle.frame_loop:
                time.sleep(IDLE_SLEEP_S)
                return None
            if self.headless:
                self._wait_tick()
                return self._locate(self.now()) if self.lifecycle.locates_head else None
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

    def _wait_tick(self) -> None:
        """Sleep to the next 1 / HEADLESS_RATE_HZ tick; a late caller starts a new grid instead of catching up."""
        now = time.perf_counter()
        if self._next_tick > now:
            time.sleep(self._next_tick - now)
            self._next_tick += 1.0 / HEADLESS_RATE_HZ
        else:
            self._next_tick = now + 1.0 / HEADLESS_RATE_HZ

    def _handle_events(self) -> None:
        xr = self._xr
        while True:
            event = xr.EventDataBuffer()
            if _checked(xr, xr.raw_functions.xrPollEvent(self.instance, byref(event)),
                        xr.Result.EVENT_UNAVAILABLE) == xr.Result.EVENT_UNAVAILABLE:
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
        """Head and grips at `display_time`; the grips only while the runtime gives input (focused, or headless)."""
        xr = self._xr
        located_s = time.perf_counter()
        raw, flags = np.full((3, 7), np.nan), [0, 0, 0]
        if self.headless:  # no view configuration runs in a headless session: the VIEW space is the eyes' centre
            raw[0], flags[0] = self._locate_space(0, self._view, display_time)
        else:
            view_state, views = xr.locate_views(self.session, xr.ViewLocateInfo(
                view_configuration_type=xr.ViewConfigurationType.PRIMARY_STEREO, display_time=display_time,
                space=self._base))
            head = head_from_eyes(stream_poses(np.array([posef_array(v.pose) for v in views])))
            flags[0] = int(view_state.view_state_flags)
        if self.lifecycle.locates_hands and (self._sync_actions() or self.headless):
            for i, grip in enumerate(self._grips, start=1):
                raw[i], flags[i] = self._locate_space(i, grip, display_time)
        poses = stream_poses(raw)
        if not self.headless:
            poses[0] = head
        return frame_from_poses(display_time, poses, flags, located_s)

    def _locate_space(self, device: int, space, display_time: int) -> tuple[np.ndarray, int]:
        """xrLocateSpace of `space` in the base space into the device's own XrSpaceLocation: the pose as
        XrPosef lays it out (posef_array) and the location flags."""
        xr, location = self._xr, self._locations[device]
        _checked(xr, xr.raw_functions.xrLocateSpace(space, self._base, display_time, byref(location)))
        return posef_array(location.pose), int(location.location_flags)

    def _sync_actions(self) -> bool:
        """Sync the grip actions; False when the runtime says the session is not focused (headless always is)."""
        xr = self._xr
        result = xr.raw_functions.xrSyncActions(self.session, byref(self._sync_info))
        return _checked(xr, result, xr.Result.SESSION_NOT_FOCUSED) != xr.Result.SESSION_NOT_FOCUSED

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
                                    f"({tracking_status(source.lifecycle) or 'the session never became visible'}): "
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


def _vulkan_device(xr, instance, system):
    """A bare Vulkan device on the GPU the runtime names, with the extensions it asks for (XR_KHR_vulkan_enable)."""
    from .vulkan_device import VulkanDevice, VulkanUnavailable

    with _step(xr, "reading the runtime's Vulkan requirements"):
        required = xr.get_vulkan_graphics_requirements_khr(instance, system)
        instance_extensions = xr.get_vulkan_instance_extensions_khr(instance, system).split()
        device_extensions = xr.get_vulkan_device_extensions_khr(instance, system).split()
    version = required.min_api_version_supported
    version = max((version.major, version.minor), (1, 1))

    def physical_device(vk_instance):
        handle = dict(xr.GraphicsBindingVulkanKHR._fields_)["instance"]
        device = xr.get_vulkan_graphics_device_khr(instance, system, cast(c_void_p(vk_instance), handle))
        return cast(device, c_void_p).value

    try:
        return VulkanDevice(instance_extensions, physical_device, device_extensions, version)
    except VulkanUnavailable as error:
        raise OpenXRUnavailable(f"the session needs a Vulkan device and none could be made: {error}") from None
    except xr.XrException as error:
        raise OpenXRUnavailable(f"the runtime named no Vulkan device ({type(error).__name__}: {error})") from None


def _checked(xr, result, *expected):
    """A raw OpenXR call's result (`xr.raw_functions`), raised as pyopenxr's wrappers raise it unless it is one of
    `expected`. The frame loop calls the raw functions: a result raised and caught on every frame (no event
    pending, a session not focused) leaves a traceback cycle each time for the garbage collector, which then
    runs in the middle of a frame."""
    if result in expected:
        return result
    outcome = xr.exception.check_result(result)
    if outcome.is_exception():
        raise outcome
    return result


def _cast(event, structure):
    return cast(byref(event), POINTER(structure)).contents


def _quietly(xr, destroy, handle) -> None:
    try:
        destroy(handle)
    except xr.XrException:
        pass  # a lost instance takes its handles with it
