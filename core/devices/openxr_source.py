"""OpenXR three-point source: a live headset and two controllers, read through pyopenxr into stream frames.

`OpenXRSource` is the runtime boundary (instance, session, spaces, actions), over the pose conversion
of `openxr_frames` and the session state machine of `openxr_lifecycle`, both tested without a runtime.
pyopenxr (`xr`) is a development dependency, imported only here, when a source is opened.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from ctypes import POINTER, byref, c_void_p, cast

import numpy as np

from ..errors import DeviceUnavailable
from ..files.stream import DEVICES, ThreePointStream
from .openxr_frames import (REFERENCE_SPACES, Frame, frame_from_poses, frames_to_stream, head_from_eyes,
                            pick_reference_space, posef_array, stream_poses)
from .openxr_lifecycle import SessionCall, SessionLifecycle, tracking_status

NO_RUNTIME = ("no OpenXR runtime is installed or active: install and start one (SteamVR, Monado, "
              "Meta Quest Link...) and make it the active OpenXR runtime")

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
# The record button per profile, (left hand, right hand) input components: a face button both hands reach without
# letting go of the grip and no application reserves (the system and Oculus buttons are the runtime's).
RECORD_BUTTONS = {"/interaction_profiles/khr/simple_controller": ("menu/click", "menu/click"),
                  "/interaction_profiles/oculus/touch_controller": ("x/click", "a/click"),
                  "/interaction_profiles/valve/index_controller": ("a/click", "a/click"),
                  "/interaction_profiles/htc/vive_controller": ("menu/click", "menu/click"),
                  "/interaction_profiles/microsoft/motion_controller": ("menu/click", "menu/click"),
                  "/interaction_profiles/hp/mixed_reality_controller": ("x/click", "a/click"),
                  "/interaction_profiles/samsung/odyssey_controller": ("menu/click", "menu/click"),
                  "/interaction_profiles/ml/ml2_controller": ("menu/click", "menu/click")}
GRAPHICS = ("auto", "headless", "vulkan", "opengl")
IDLE_SLEEP_S = 0.01  # between polls while no frame loop runs
HEADLESS_RATE_HZ = 90.0  # a headless session has no display to pace it: the source samples at a headset's rate


class OpenXRUnavailable(DeviceUnavailable):
    """OpenXR cannot be used here; the message says what is missing (runtime, headset, pyopenxr, a GL window)."""


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
        self._grips, self._hands, self._action_set, self._button = [], [], None, None
        self.button_bound = False  # whether the runtime bound the record button on either controller
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
        self._button = xr.create_action(self._action_set, xr.ActionCreateInfo(
            action_name="record", action_type=xr.ActionType.BOOLEAN_INPUT, subaction_paths=self._hands,
            localized_action_name="Start or stop a take"))
        for profile, extension in PROFILES.items():
            if extension is not None and extension not in offered:
                continue
            grips = [xr.ActionSuggestedBinding(grip, xr.string_to_path(self.instance, f"{h}/input/grip/pose"))
                     for h in HANDS]
            buttons = [xr.ActionSuggestedBinding(self._button, xr.string_to_path(self.instance, f"{h}/input/{c}"))
                       for h, c in zip(HANDS, RECORD_BUTTONS[profile])]
            for bindings in (grips + buttons, grips):  # a runtime refusing the button still tracks the grips
                try:
                    xr.suggest_interaction_profile_bindings(self.instance, xr.InteractionProfileSuggestedBinding(
                        interaction_profile=xr.string_to_path(self.instance, profile), suggested_bindings=bindings))
                except (xr.PathUnsupportedError, xr.PathInvalidError):
                    continue  # a runtime may not know every profile, or its button
                self.profiles.append(profile)
                break
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
        headless, the source's own HEADLESS_RATE_HZ does). The session or instance lost, or any other error the
        runtime answers, ends the session (`finished`; `lifecycle.stop_reason` says which) rather than raising.
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
        except xr.XrException as error:  # the runtime failed (crashed, or went away): nothing more can be asked of it
            self.lifecycle.on_failed(f"{type(error).__name__}: {str(error).strip()}")
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
        button = False
        if self.lifecycle.locates_hands and ((synced := self._sync_actions()) or self.headless):
            for i, grip in enumerate(self._grips, start=1):
                raw[i], flags[i] = self._locate_space(i, grip, display_time)
            button = synced and self._record_button()
        poses = stream_poses(raw)
        if not self.headless:
            poses[0] = head
        return frame_from_poses(display_time, poses, flags, located_s, button)

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

    def _record_button(self) -> bool:
        """Whether the record button (RECORD_BUTTONS) is held on either controller; `button_bound` says whether the
        runtime bound it to any."""
        xr, held = self._xr, False
        for hand in self._hands:
            state = xr.get_action_state_boolean(self.session, xr.ActionStateGetInfo(action=self._button,
                                                                                   subaction_path=hand))
            self.button_bound |= bool(state.is_active)
            held |= bool(state.is_active and state.current_state)
        return held

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
