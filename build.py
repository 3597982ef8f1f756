#!/usr/bin/env python3
"""VR Avatar's single entry point: set-up, demo, tests, benchmarks and the Blender extension.

    python build.py demo [--mocap DIR]   stream, database, solve and report, then out/demo.blend and demo.png
    python build.py test [PYTEST ARGS]   the test suite but the add-on's (what CI runs, then test-blender)
    python build.py bench                speed figures as JSON
    python build.py eval-rigs [--json]   the add-on's user path on ../shared/rigs, measured on the baked avatars
    python build.py test-blender [4.5 5.0 5.3] [PYTEST ARGS]
                                         the add-on's tests in a clean environment per supported Blender
    python build.py extension            dist/vr_avatar-<version>.zip, self-contained (its wheels bundled)
    python build.py xr-runtime           Monado, the OpenXR runtime the tests use, built into build/monado

Each command first makes sure `.venv` exists with the requirements it needs (NEEDS: the groups of
pyproject.toml's optional dependencies) and says what it installs and why; the rest come when a command
needs them. torch (training, and so the tests) is pinned to 2.13.0, the local CPU build.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import xr_runtime
from core.files.atomic import write_text

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


GROUPS = {"blender": "Blender as a Python module: the demo's scene, the add-on's tests",
          "report": "the evaluations' and training curves' plots", "live": "the live path against an OpenXR runtime",
          "train": "training the networks (the tests train small ones)", "physics": "the physics pass (MuJoCo, DAQP)",
          "test": "the test runner"}
"""pyproject.toml's optional dependency groups, and what each is for."""
NEEDS = {"demo": ("blender",), "test": tuple(GROUPS), "bench": ("blender", "live"),
         "eval-rigs": ("blender",), "extension": None, "xr-runtime": None, "test-blender": None}
"""The groups each command installs (numpy, the one run-time dependency, always); None: the command runs on the
Python that runs build.py, with no `.venv`."""


def requirements(groups=()) -> list[str]:
    """The requirements of the named groups (pyproject.toml), the project's own dependencies first."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"]) + [r for g in groups for r in project["optional-dependencies"][g]]


def ensure_environment(groups=()) -> None:
    """Create `.venv` and install what the named groups need and it lacks, saying what and why."""
    stamp = VENV / ".requirements.json"
    installed = json.loads(stamp.read_text()) if stamp.exists() and venv_python().exists() else {}
    if installed.get("python") != sys.version:
        installed = {"python": sys.version, "requirements": []}
    if not venv_python().exists():
        print(f"build.py: creating {VENV.name} with Python {sys.version.split()[0]}", file=sys.stderr)
        venv.EnvBuilder(with_pip=True).create(VENV)
    pip = [str(venv_python()), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    for group in (None, *groups):
        wanted = [r for r in requirements([group] if group else []) if r not in installed["requirements"]]
        if group is not None:
            wanted = [r for r in wanted if r not in requirements()]
        if not wanted:
            continue
        why = GROUPS[group] if group else "the core library"
        print(f"build.py: installing {', '.join(wanted)} ({why})", file=sys.stderr)
        subprocess.run(pip + wanted, check=True)
        installed["requirements"] += wanted
        write_text(stamp, json.dumps(installed))


def run_in_environment(args: list[str], capture: bool = False, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the venv's Python in the repository with the repository on the path (and `env` added); `capture`
    keeps stdout."""
    env = dict(os.environ, **(env or {}), PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([str(venv_python()), *args], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE if capture else None)


def demo(args: list[str]) -> int:
    """The core demo (stream, database, solved BVH, report), then the Blender scene made from its output and the
    add-on's panels as they show it."""
    done = run_in_environment(["-m", "core", "demo", *args], capture=True)
    print(done.stdout, end="")
    if done.returncode:
        return done.returncode
    summary = json.loads(done.stdout)
    out = Path(summary["stream"]).parent
    scene = run_in_environment(["-m", "addon_tools.demo_scene", "--out", str(out), "--stream", summary["stream"],
                                "--db", summary["solved"]["database"], "--avatar", summary["bvh_copy"]])
    if scene.returncode:
        return scene.returncode
    return run_in_environment(["-m", "addon_tools.panel_listing", "--blend", str(out / "demo.blend"), "--png",
                               str(out / "panels.png"), "--md", str(out / "panels.md")]).returncode


ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Each test worker's numerical libraries on one thread (unless set): a worker a core, not two threads a worker
fighting over it (the suite 145 s against 197 s on two cores)."""


def test(args: list[str]) -> int:
    """ruff's error checks, then the suite on every core (pytest-xdist, each file's tests on one worker, in order),
    after building the OpenXR runtime its live tests run against (they skip, saying why, without it). The add-on's
    own tests (tests/addon) are `test-blender`'s: they run there in a clean environment per Blender line."""
    linted = run_in_environment(["-m", "ruff", "check", "--quiet", "core", "vr_avatar_addon", "addon_tools", "tests",
                                 "build.py", "xr_runtime.py"])
    if linted.returncode:
        return linted.returncode
    xr_runtime.build_or_explain()
    one_thread = {name: os.environ.get(name, "1") for name in ONE_THREAD}
    return run_in_environment(["-m", "pytest", "tests", "--ignore", "tests/addon", "-n", "auto", "--dist", "loadfile",
                               *args],
                              env=one_thread).returncode


def bench(args: list[str]) -> int:
    """Core's speed figures as one JSON object, the add-on's (tests/bench_blender.py, real bpy) under "blender",
    the live latency against the OpenXR runtime (tests/bench_openxr.py, 60 s on one core) under "openxr"."""
    figures = {}
    runs = [(None, ["-m", "core", "bench", "--json", *args], {}), ("blender", ["tests/bench_blender.py"], {})]
    if xr_runtime.build_or_explain() is not None:
        runs.append(("openxr", ["tests/bench_openxr.py"], {**xr_runtime.environment(), "OMP_NUM_THREADS": "1",
                                                           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}))
    for key, command, env in runs:
        done = run_in_environment(command, capture=True, env=env)
        if done.returncode:
            sys.stdout.write(done.stdout)
            return done.returncode
        result = json.loads(done.stdout)
        figures.update({key: result} if key else result)
    print(json.dumps(figures, indent=2))
    return 0


def eval_rigs(args: list[str]) -> int:
    """Import, map, solve and bake onto every rig of ../shared/rigs in the real bpy; figures and contact sheets."""
    return run_in_environment(["-m", "addon_tools.eval_rigs", *args]).returncode


DESKTOPS = ["manylinux_2_28_x86_64", "win_amd64", "macosx_11_0_arm64"]
WHEELS = {"pyopenxr": ("pyopenxr==1.1.6501", ["any"]), "PyOpenGL": ("PyOpenGL==3.1.10", ["any"]),
          "glfw": ("glfw==2.11.0", [*DESKTOPS, "macosx_10_6_intel"]),
          "mujoco": ("mujoco==4.0.0", ["any"]), "mujoco_core": ("mujoco-core==4.0.0", DESKTOPS),
          "daqp": ("daqp==0.11.0", [*DESKTOPS, "macosx_10_13_x86_64"])}
"""What the extension imports beyond Blender, and the platforms each wheel is fetched for ("any": pure Python), for
each Python of BLENDERS. Live preview: pyopenxr, PyOpenGL to load it, glfw for a runtime without a headless session
(no wheel for Linux on ARM, where live preview needs a headless runtime). The physics pass: mujoco (its Python
part; mujoco-core its library, none for Intel Macs, where the pass says it is missing) and daqp. Blender
installs the wheels of its own platform and Python."""


def bundled_wheels() -> list[Path]:
    """The wheels the extension carries (WHEELS), fetched (or taken from pip's cache) into dist/wheels."""
    folder = ROOT / "dist" / "wheels"
    download = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps",
                "--only-binary", ":all:", "-d", str(folder)]
    wheels = []
    for name, (requirement, platforms) in WHEELS.items():
        for platform in platforms:
            for python in sorted({python for _, python in BLENDERS.values()} if platform != "any" else [None]):
                where = [] if platform == "any" else ["--platform", platform, "--python-version", python]
                subprocess.run(download + where + [requirement], check=True)
        version = requirement.split("==")[1]
        wheels += sorted(set(folder.glob(f"{name.lower()}-{version}-*.whl")))
    return wheels


BLENDERS = {"4.5": ("bpy==4.5.15", "3.11"), "5.0": ("bpy==5.0.1", "3.11"), "5.3": ("bpy==5.3.0", "3.13")}
"""The Blender lines the extension supports (4.5 LTS, 5.0, the newest 5.x) as bpy modules, with their Python."""
TEST_RUNNER = ["pytest>=8", "hypothesis>=6.100"]
TEST_FILE_TIMEOUT_S = 600
"""Each test file runs in its own process (bpy 4.5 can hang at exit after a long session), this long at most."""


def find_python(version: str) -> str | None:
    """A Python interpreter of that version ("3.13") that runs: on the path, else one pyenv installed."""
    candidates = [shutil.which(f"python{version}")] + sorted(
        str(p) for p in (Path.home() / ".pyenv" / "versions").glob(f"{version}*/bin/python{version}"))
    for candidate in filter(None, candidates):
        done = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() == version:
            return candidate
    return None


def blender_environment(line: str) -> Path | None:
    """`.venv-blender-<line>`: that Blender's bpy and the test runner, nothing else (made once); None, saying why,
    where its Python is not installed."""
    requirement, version = BLENDERS[line]
    folder = ROOT / f".venv-blender-{line}"
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    stamp = folder / ".requirements.json"
    wanted = [requirement, *TEST_RUNNER]
    if python.exists() and stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return python
    interpreter = find_python(version)
    if interpreter is None:
        print(f"build.py test-blender: Blender {line} needs Python {version}, which is not installed: skipped",
              file=sys.stderr)
        return None
    print(f"build.py: creating {folder.name} with Python {version}: {', '.join(wanted)} (Blender {line}'s bpy and "
          "the test runner, nothing else)", file=sys.stderr)
    subprocess.run([interpreter, "-m", "venv", "--clear", str(folder)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *wanted], check=True)
    write_text(stamp, json.dumps(wanted))
    return python


def test_blender(args: list[str]) -> int:
    """The add-on's tests (tests/addon) in a clean environment per supported Blender (BLENDERS; all, or those
    named): the extension zip, with its wheels, installed through Blender's extension installer, and only bpy and
    the test runner beside it. Other arguments go to pytest."""
    lines = [a for a in args if a in BLENDERS] or list(BLENDERS)
    pytest_args = [a for a in args if a not in BLENDERS]
    wheels = os.pathsep.join(str(w) for w in bundled_wheels())
    results = {}
    for line in lines:
        python = blender_environment(line)
        if python is None:
            results[line] = "skipped"
            continue
        env = dict(os.environ, PYTHONPATH=str(ROOT), VR_AVATAR_EXTENSION_WHEELS=wheels)
        failed = []
        for tests in sorted((ROOT / "tests" / "addon").glob("test_*.py")):
            try:
                done = subprocess.run([str(python), "-m", "pytest", str(tests.relative_to(ROOT)), "-q",
                                       "-p", "no:cacheprovider", *pytest_args], cwd=ROOT, env=env,
                                      timeout=TEST_FILE_TIMEOUT_S)
                failed += [tests.name] if done.returncode not in (0, 5) else []
            except subprocess.TimeoutExpired:
                failed.append(f"{tests.name} (over {TEST_FILE_TIMEOUT_S} s)")
        results[line] = "passed" if not failed else "failed: " + ", ".join(failed)
    print("build.py test-blender: " + ", ".join(f"Blender {line} {result}" for line, result in results.items()),
          file=sys.stderr)
    return 1 if any(result.startswith("failed") for result in results.values()) else 0


def extension(args: list[str]) -> int:
    """dist/vr_avatar-<version>.zip with its wheels (WHEELS); `--no-wheels` leaves them out (61 MB smaller)."""
    from importlib import util

    spec = util.spec_from_file_location("extension_packaging", ROOT / "addon_tools" / "packaging.py")
    packaging = util.module_from_spec(spec)
    spec.loader.exec_module(packaging)
    path = packaging.build_extension(ROOT, ROOT / "dist", [] if "--no-wheels" in args else bundled_wheels())
    print(path)
    return 0


def runtime(_args: list[str]) -> int:
    """Build Monado from ../shared/openxr into build/monado (reused when built); prints its runtime manifest."""
    try:
        print(xr_runtime.build())
    except xr_runtime.RuntimeBuildUnavailable as error:
        print(f"build.py xr-runtime: {error}", file=sys.stderr)
        return 1
    return 0


COMMANDS = {"demo": demo, "test": test, "bench": bench, "eval-rigs": eval_rigs, "extension": extension,
            "xr-runtime": runtime, "test-blender": test_blender}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if NEEDS[argv[0]] is not None:
        ensure_environment(NEEDS[argv[0]])
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
