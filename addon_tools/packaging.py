"""Packaging: validates blender_manifest.toml and writes the self-contained extension zip.

Run as `python build.py extension`, outside Blender: this module imports neither bpy nor the
add-on, and is left out of the zip. The zip holds at its root the manifest, the add-on's modules,
`core/`'s runtime modules (the library without its command line, training, evaluation and benchmark
code, so the extension needs nothing else) and `assets/`' models and records (not its plots).
"""
from __future__ import annotations

import os
import re
import tempfile
import tomllib
import zipfile
from pathlib import Path

EXTENSION_ID = "vr_avatar"
MIN_BLENDER = (4, 5, 0)
TERSE_MAX = 64  # Blender's limit for the tagline and permission reasons
PERMISSIONS = {"files", "network", "clipboard", "camera", "microphone"}
REQUIRED = {
    "schema_version": str, "id": str, "version": str, "name": str, "tagline": str,
    "maintainer": str, "type": str, "license": list, "blender_version_min": str,
}
OPTIONAL = {"tags": list, "permissions": dict, "blender_version_max": str, "website": str, "copyright": list}
SKIPPED = {"__pycache__", ".gitkeep", ".DS_Store"}
# Modules of the add-on folder that run outside Blender's add-on system (build and demo tooling).
CORE_NOT_SHIPPED = ("tools", "__main__.py")
"""Core's tools, which Blender never runs: `core/tools/` (the command line, training, evaluation, benchmarks,
the demo, and the offline experiments only those use) and `python -m core`'s entry point. The zip carries the
runtime alone; a test imports every module it ships."""
ASSETS_NOT_SHIPPED = ("*.png", "orientation_r1.*")
"""Training curves and evaluation plots, and the r = 1 ablation only `eval orientation` reads: documentation and
evaluation, not what the add-on loads. A model's training record (`<model>.json` beside `<model>.npz`) stays out
too: the model file carries the same record as its `info`."""


def _version(value: str, key: str) -> tuple[int, ...]:
    if not re.fullmatch(r"\d+\.\d+\.\d+", value):
        raise ValueError(f"blender_manifest.toml: {key} must be three numbers 'X.Y.Z', found {value!r}")
    return tuple(int(part) for part in value.split("."))


def _terse(value: str, key: str) -> None:
    """Blender's rule for short texts: non-empty, at most 64 characters, no trailing punctuation."""
    if not value.strip() or value != value.strip():
        raise ValueError(f"blender_manifest.toml: {key} must be non-empty without surrounding spaces")
    if len(value) > TERSE_MAX:
        raise ValueError(f"blender_manifest.toml: {key} is {len(value)} characters, at most {TERSE_MAX} allowed")
    if not (value[-1].isalnum() or value[-1] in ")]}"):
        raise ValueError(f"blender_manifest.toml: {key} must not end with punctuation ({value[-1]!r})")


def validate_manifest(root: Path) -> dict:
    """The manifest as a dict; ValueError naming the key if Blender would reject it or it disagrees with pyproject."""
    try:
        manifest = tomllib.loads((root / "blender_manifest.toml").read_text(encoding="utf-8"))
        project_version = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as error:
        raise ValueError(f"cannot read blender_manifest.toml and pyproject.toml's [project].version: {error}") from None
    for key, kind in {**REQUIRED, **OPTIONAL}.items():
        if key not in manifest:
            if key in REQUIRED:
                raise ValueError(f"blender_manifest.toml: missing required key {key!r}")
        elif not isinstance(manifest[key], kind):
            raise ValueError(f"blender_manifest.toml: {key} must be a {kind.__name__}, "
                             f"found {type(manifest[key]).__name__}")
    for key in ("schema_version", "name", "maintainer"):
        if not manifest[key].strip():
            raise ValueError(f"blender_manifest.toml: {key} must not be empty")
    _version(manifest["schema_version"], "schema_version")
    if manifest["id"] != EXTENSION_ID:
        raise ValueError(f"blender_manifest.toml: id must be {EXTENSION_ID!r}, found {manifest['id']!r}")
    if manifest["type"] != "add-on":
        raise ValueError(f"blender_manifest.toml: type must be 'add-on', found {manifest['type']!r}")
    _version(manifest["version"], "version")
    if manifest["version"] != project_version:
        raise ValueError(f"blender_manifest.toml: version {manifest['version']!r} differs from "
                         f"pyproject.toml's [project].version {project_version!r}")
    if _version(manifest["blender_version_min"], "blender_version_min") < MIN_BLENDER:
        raise ValueError(f"blender_manifest.toml: blender_version_min must be at least "
                         f"{'.'.join(map(str, MIN_BLENDER))} (the oldest Blender the add-on is tested on), "
                         f"found {manifest['blender_version_min']!r}")
    _terse(manifest["tagline"], "tagline")
    for key in ("license", "tags"):
        if key in manifest and not (manifest[key] and all(isinstance(v, str) and v for v in manifest[key])):
            raise ValueError(f"blender_manifest.toml: {key} must be a non-empty list of non-empty strings")
    if not all(v.startswith("SPDX:") for v in manifest["license"]):
        raise ValueError("blender_manifest.toml: license entries must be 'SPDX:<identifier>'")
    for permission, reason in manifest.get("permissions", {}).items():
        if permission not in PERMISSIONS:
            raise ValueError(f"blender_manifest.toml: permissions.{permission} is not one of {sorted(PERMISSIONS)}")
        if not isinstance(reason, str):
            raise ValueError(f"blender_manifest.toml: permissions.{permission} must be a string reason")
        _terse(reason, f"permissions.{permission}")
    return manifest


def _files(folder: Path, pattern: str):
    """Files under `folder` matching `pattern`, recursively, without caches and placeholders."""
    for path in sorted(folder.rglob(pattern)):
        if path.is_file() and not SKIPPED.intersection(path.relative_to(folder).parts):
            yield path


def extension_contents(root: Path) -> dict[str, Path]:
    """Archive name -> source file, for everything the extension zip holds."""
    contents = {"blender_manifest.toml": root / "blender_manifest.toml"}
    addon = root / "vr_avatar_addon"
    for path in _files(addon, "*"):
        contents[path.relative_to(addon).as_posix()] = path
    for path in _files(root / "core", "*.py"):
        if path.relative_to(root / "core").parts[0] not in CORE_NOT_SHIPPED:
            contents["core/" + path.relative_to(root / "core").as_posix()] = path
    if (root / "assets").is_dir():
        for path in _files(root / "assets", "*"):
            record = path.suffix == ".json" and path.with_suffix(".npz").is_file()
            if not record and not any(path.match(pattern) for pattern in ASSETS_NOT_SHIPPED):
                contents["assets/" + path.relative_to(root / "assets").as_posix()] = path
    return contents


def manifest_with_wheels(text: str, wheels: list[str]) -> str:
    """The manifest's text with a top-level `wheels` list naming the bundled wheels, before the first table."""
    if not wheels:
        return text
    entry = "wheels = [" + ", ".join(f'"./wheels/{name}"' for name in wheels) + "]\n\n"
    lines = text.splitlines(keepends=True)
    first_table = next((i for i, line in enumerate(lines) if line.lstrip().startswith("[")), len(lines))
    return "".join(lines[:first_table]) + entry + "".join(lines[first_table:])


def build_extension(root: Path, dist: Path, wheels=()) -> Path:
    """Validate the manifest, then write `dist/vr_avatar-<version>.zip` atomically; returns its path.

    `wheels` (.whl files) are bundled under wheels/ and listed in the zip's manifest, so Blender
    installs them with the extension (pyopenxr for the OpenXR source).
    """
    root, dist = Path(root), Path(dist)
    manifest = validate_manifest(root)
    wheels = [Path(w) for w in wheels]
    bad = [w.name for w in wheels if w.suffix != ".whl" or not w.is_file()]
    if bad:
        raise ValueError(f"not a wheel file: {', '.join(bad)}")
    contents = extension_contents(root)
    if "__init__.py" not in contents or "core/__init__.py" not in contents:
        raise ValueError("the add-on's __init__.py and core/__init__.py must both exist to build the extension")
    dist.mkdir(parents=True, exist_ok=True)
    target = dist / f"{EXTENSION_ID}-{manifest['version']}.zip"
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=dist)
    try:
        with os.fdopen(handle, "wb") as file, zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, path in contents.items():
                if name == "blender_manifest.toml":
                    text = path.read_text(encoding="utf-8")
                    archive.writestr(name, manifest_with_wheels(text, [w.name for w in wheels]))
                else:
                    archive.write(path, name)
            for wheel in wheels:
                archive.write(wheel, f"wheels/{wheel.name}")
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
