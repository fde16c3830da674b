"""Every laptop: the lock file has, for each platform students use, a wheel of every package that
platform installs (no package there needs a compiler or lacks a build). Walks uv.lock's dependency
graph from the project for each platform and Python 3.11 (.python-version), evaluating its markers."""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.markers import Marker

from staff.grading.grade import REPO_ROOT

# (name, environment markers, a wheel tag that installs there)
PLATFORMS = [
    ("Linux x86_64", {"sys_platform": "linux", "platform_machine": "x86_64", "platform_system": "Linux"},
     re.compile(r"(manylinux|musllinux)[^-]*_x86_64|linux_x86_64")),
    ("Linux aarch64", {"sys_platform": "linux", "platform_machine": "aarch64", "platform_system": "Linux"},
     re.compile(r"(manylinux|musllinux)[^-]*_aarch64|linux_aarch64")),
    ("macOS arm64", {"sys_platform": "darwin", "platform_machine": "arm64", "platform_system": "Darwin"},
     re.compile(r"macosx_[\d_]+_(arm64|universal2)")),
    ("macOS x86_64 (Intel)", {"sys_platform": "darwin", "platform_machine": "x86_64", "platform_system": "Darwin"},
     re.compile(r"macosx_[\d_]+_(x86_64|universal2|intel)")),
    ("Windows x86_64", {"sys_platform": "win32", "platform_machine": "AMD64", "platform_system": "Windows"},
     re.compile(r"win_amd64")),
]


def environment(markers: dict[str, str]) -> dict[str, str]:
    version = (REPO_ROOT / ".python-version").read_text().strip()
    return {"python_version": version, "python_full_version": f"{version}.9", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "os_name": "nt" if markers["sys_platform"] == "win32"
            else "posix", "extra": "", **markers}


def installs(lock: dict, env: dict[str, str]) -> list[dict]:
    """The locked packages that `uv sync` installs in `env`: the project's dependencies (and the
    staff group's), followed through the lock's dependency lists, markers evaluated."""
    by_name: dict[str, list[dict]] = {}
    for package in lock["package"]:
        by_name.setdefault(package["name"], []).append(package)

    def pick(dependency: dict) -> dict | None:
        if "marker" in dependency and not Marker(dependency["marker"]).evaluate(env):
            return None
        versions = [p for p in by_name[dependency["name"]] if dependency.get("version") in (None, p["version"])]
        versions = [p for p in versions
                    if not p.get("resolution-markers") or any(Marker(m).evaluate(env) for m in p["resolution-markers"])]
        assert len(versions) == 1, f"{dependency['name']}: {len(versions)} locked versions apply to {env}"
        return versions[0]

    root = by_name["cs336-basics"][0]
    todo = list(root.get("dependencies", []))
    todo += [d for group in root.get("dev-dependencies", {}).values() for d in group]
    seen: dict[str, dict] = {}
    while todo:
        package = pick(todo.pop())
        key = f"{package['name']}=={package['version']}" if package is not None else ""
        if package is None or key in seen:
            continue
        seen[key] = package
        todo += package.get("dependencies", [])
    return list(seen.values())


def has_wheel(package: dict, tag: re.Pattern, version: str) -> bool:
    python = "cp" + version.replace(".", "")
    for wheel in package.get("wheels", []):
        name = wheel["url"].rsplit("/", 1)[-1]
        pyver, abi, platform = name.removesuffix(".whl").split("-")[-3:]
        fits_python = python in pyver.split(".") or "abi3" in abi or pyver.startswith("py3") or pyver == "py2.py3"
        if fits_python and (platform == "any" or tag.search(platform)):
            return True
    return False


@pytest.mark.parametrize("platform, markers, tag", PLATFORMS, ids=[p[0] for p in PLATFORMS])
def test_the_lock_has_a_wheel_of_every_package_each_platform_installs(platform, markers, tag):
    lock = tomllib.loads((REPO_ROOT / "uv.lock").read_text())
    env = environment(markers)
    packages = installs(lock, env)
    assert {"torch", "numpy", "pytest"} <= {p["name"] for p in packages}
    missing = [f"{p['name']} {p['version']}" for p in packages if not has_wheel(p, tag, env["python_version"])]
    assert not missing, f"{platform}, Python {env['python_version']}: no wheel in uv.lock for {missing}"


def test_intel_macs_get_the_last_torch_built_for_them_and_everyone_else_a_safe_one():
    lock = tomllib.loads((REPO_ROOT / "uv.lock").read_text())
    versions = {}
    for platform, markers, _ in PLATFORMS:
        torch = next(p for p in installs(lock, environment(markers)) if p["name"] == "torch")
        versions[platform] = tuple(int(x) for x in torch["version"].split(".")[:2])
    assert versions.pop("macOS x86_64 (Intel)") == (2, 2)
    assert all(v >= (2, 6) for v in versions.values()), versions  # torch.load(weights_only=True) fixed in 2.6
