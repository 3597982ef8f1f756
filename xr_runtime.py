"""The OpenXR runtime the tests run against: Monado (simulated headset and controllers, null compositor).

`python build.py xr-runtime` builds it from `../shared/openxr/` (source tarball and a one-line
build fix) into `build/monado/`, which git ignores; a stamp reuses a finished build. The Debian
packages it needs are installed with apt-get when they are missing and this runs as root.

The result is a runtime manifest (`openxr_monado-dev.json`) to point `XR_RUNTIME_JSON` at; when
the build cannot be made, `build/monado/unavailable.txt` says why, for the tests to skip with.
Imports nothing beyond the standard library: it runs before the venv exists.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from core.files.atomic import write_text

ROOT = Path(__file__).resolve().parent
SOURCE = ROOT.parent / "shared" / "openxr"
TARBALL = "monado-c38e1082.tar.xz"
PATCH = "monado-no-comp-main.patch"
FOLDER = ROOT / "build" / "monado"
STAMP = FOLDER / "built.stamp"
UNAVAILABLE = FOLDER / "unavailable.txt"
MANIFEST = FOLDER / "build" / "openxr_monado-dev.json"
LAVAPIPE_ICD = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")

PACKAGES = ("cmake", "ninja-build", "build-essential", "pkg-config", "libeigen3-dev", "libvulkan-dev",
            "glslang-tools", "mesa-vulkan-drivers", "libudev-dev", "libcjson-dev", "libbsd-dev")
# The runtime loads into the application's process (no service, no IPC); only the simulated
# driver and the null compositor are built.
OFF = ("BUILD_TESTING", "XRT_BUILD_SAMPLES", "XRT_FEATURE_SERVICE", "XRT_MODULE_IPC", "XRT_MODULE_COMPOSITOR_MAIN",
       "XRT_MODULE_MONADO_GUI", "XRT_MODULE_MONADO_CLI", "XRT_FEATURE_STEAMVR_PLUGIN", "XRT_FEATURE_SLAM",
       "XRT_FEATURE_DEBUG_GUI", "XRT_FEATURE_CLIENT_DEBUG_GUI", "XRT_FEATURE_WINDOW_PEEK", "XRT_HAVE_OPENGL",
       "XRT_HAVE_OPENGLES", "XRT_HAVE_OPENGL_GLX", "XRT_HAVE_EGL", "XRT_HAVE_SDL2", "XRT_HAVE_XCB", "XRT_HAVE_XLIB",
       "XRT_HAVE_XRANDR", "XRT_HAVE_WAYLAND", "XRT_HAVE_WAYLAND_DIRECT", "XRT_HAVE_LIBUSB", "XRT_HAVE_HIDAPI",
       "XRT_HAVE_LIBUVC", "XRT_HAVE_OPENCV", "XRT_HAVE_FFMPEG", "XRT_HAVE_GST", "XRT_HAVE_REALSENSE",
       "XRT_HAVE_DBUS", "XRT_HAVE_SYSTEMD", "XRT_HAVE_PERCETTO", "XRT_HAVE_TRACY", "XRT_MODULE_MERCURY_HANDTRACKING",
       "XRT_BUILD_DRIVER_ANDROID", "XRT_BUILD_DRIVER_ARDUINO", "XRT_BUILD_DRIVER_DAYDREAM", "XRT_BUILD_DRIVER_DEPTHAI",
       "XRT_BUILD_DRIVER_EUROC", "XRT_BUILD_DRIVER_HANDTRACKING", "XRT_BUILD_DRIVER_HDK", "XRT_BUILD_DRIVER_HYDRA",
       "XRT_BUILD_DRIVER_ILLIXR", "XRT_BUILD_DRIVER_NS", "XRT_BUILD_DRIVER_OHMD", "XRT_BUILD_DRIVER_OPENGLOVES",
       "XRT_BUILD_DRIVER_PSMV", "XRT_BUILD_DRIVER_PSSENSE", "XRT_BUILD_DRIVER_PSVR", "XRT_BUILD_DRIVER_QWERTY",
       "XRT_BUILD_DRIVER_REALSENSE", "XRT_BUILD_DRIVER_REMOTE", "XRT_BUILD_DRIVER_RIFT_S",
       "XRT_BUILD_DRIVER_SIMULAVR", "XRT_BUILD_DRIVER_STEAMVR_LIGHTHOUSE", "XRT_BUILD_DRIVER_SURVIVE",
       "XRT_BUILD_DRIVER_TWRAP", "XRT_BUILD_DRIVER_ULV2", "XRT_BUILD_DRIVER_VF", "XRT_BUILD_DRIVER_VIVE",
       "XRT_BUILD_DRIVER_WMR")
ON = ("XRT_MODULE_COMPOSITOR_NULL", "XRT_BUILD_DRIVER_SIMULATED")
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", *(f"-D{name}=OFF" for name in OFF), *(f"-D{name}=ON" for name in ON))


class RuntimeBuildUnavailable(RuntimeError):
    """The runtime cannot be built here; the message says why (no source, no compiler, no packages)."""


def fingerprint() -> str:
    """What a finished build was made from: the source, the fix and the flags."""
    digest = hashlib.sha256()
    for name in (TARBALL, PATCH):
        digest.update((SOURCE / name).read_bytes())
    digest.update("\n".join(CMAKE_FLAGS).encode())
    return digest.hexdigest()


def is_built() -> bool:
    """A finished build made from the source beside the repository (without the source, none can be vouched for)."""
    sources = all((SOURCE / name).exists() for name in (TARBALL, PATCH))
    return sources and STAMP.exists() and MANIFEST.exists() and STAMP.read_text() == fingerprint()


def missing_packages() -> list[str]:
    """The Debian packages above that dpkg does not list as installed (all of them where there is no dpkg)."""
    if shutil.which("dpkg-query") is None:
        return list(PACKAGES)
    done = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${db:Status-Abbrev}\n", *PACKAGES],
                          capture_output=True, text=True)
    installed = {line.split()[0] for line in done.stdout.splitlines() if line.split()[1:2] == ["ii"]}
    return [p for p in PACKAGES if p not in installed]


def install_packages(log) -> None:
    missing = missing_packages()
    if not missing:
        return
    if shutil.which("apt-get") is None:
        raise RuntimeBuildUnavailable(f"Debian packages {' '.join(missing)} are needed and apt-get is not available")
    if os.geteuid() != 0:
        raise RuntimeBuildUnavailable(f"Debian packages are missing; install them as root: apt-get install -y "
                                      f"--no-install-recommends {' '.join(missing)}")
    log(f"installing {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeBuildUnavailable(f"{' '.join(command[:2])} failed: {done.stderr.strip()[-300:]}")


def _run(command: list[str], cwd: Path, what: str) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise RuntimeBuildUnavailable(f"{what} failed (exit {done.returncode}):\n{tail}")


def build(log=lambda message: print(f"build.py xr-runtime: {message}", file=sys.stderr)) -> Path:
    """Build Monado unless the stamp says it is built; the runtime manifest's path. RuntimeBuildUnavailable says why not."""
    if not (SOURCE / TARBALL).exists() or not (SOURCE / PATCH).exists():
        raise RuntimeBuildUnavailable(f"the Monado source is not beside the repository ({SOURCE / TARBALL})")
    if is_built():
        return MANIFEST
    install_packages(log)
    for tool in ("cmake", "ninja", "c++", "patch"):
        if shutil.which(tool) is None:
            raise RuntimeBuildUnavailable(f"no {tool} on PATH to build the runtime with")
    if FOLDER.exists():
        shutil.rmtree(FOLDER)
    FOLDER.mkdir(parents=True)
    log(f"extracting {TARBALL} into {FOLDER.relative_to(ROOT)}")
    with tarfile.open(SOURCE / TARBALL) as archive:
        archive.extractall(FOLDER, filter="data")
    (source,) = [p for p in FOLDER.iterdir() if p.is_dir()]
    source = source.rename(FOLDER / "src")
    _run(["patch", "-p1", "-i", str(SOURCE / PATCH)], source, "applying the build fix")
    log("configuring (cmake)")
    _run(["cmake", "-G", "Ninja", "-S", str(source), "-B", str(FOLDER / "build"), *CMAKE_FLAGS], FOLDER, "cmake")
    log("compiling (ninja -j2, about a minute)")
    _run(["ninja", "-j2", "-C", str(FOLDER / "build")], FOLDER, "ninja")
    if not MANIFEST.exists():
        raise RuntimeBuildUnavailable(f"the build finished without its runtime manifest {MANIFEST}")
    write_text(STAMP, fingerprint())
    return MANIFEST


def build_or_explain(log=lambda message: print(f"build.py xr-runtime: {message}", file=sys.stderr)) -> Path | None:
    """`build`, with the reason it could not written to build/monado/unavailable.txt (and None returned)."""
    try:
        manifest = build(log)
    except RuntimeBuildUnavailable as error:
        FOLDER.mkdir(parents=True, exist_ok=True)
        write_text(UNAVAILABLE, str(error))
        log(f"the OpenXR runtime cannot be built here, its tests will skip: {error}")
        return None
    UNAVAILABLE.unlink(missing_ok=True)
    return manifest


def environment(left: str | None = "simple", right: str | None = "simple") -> dict[str, str]:
    """Environment variables that make an OpenXR application in this process tree use the built Monado.

    Its simulated headset is tracked (`SIMULATED_ENABLE`); `left` / `right` name the simulated
    controllers (simple, wmr or ml2; None: that controller is off). The null compositor runs on
    lavapipe, Mesa's CPU Vulkan driver. Monado reads these when an instance is created.
    """
    env = {"XR_RUNTIME_JSON": str(MANIFEST), "SIMULATED_ENABLE": "1", "XRT_COMPOSITOR_NULL": "1",
           "VK_ICD_FILENAMES": str(LAVAPIPE_ICD), "XRT_LOG": "warning"}
    for side, kind in (("LEFT", left), ("RIGHT", right)):
        if kind:
            env[f"SIMULATED_{side}"] = kind
    return env
