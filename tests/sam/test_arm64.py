"""The architecture AWS runs: template.yaml's arm64. `sam build` of the template itself puts the arm64
wheels in the layer (checked in their ELF headers and wheel tags), and they import for real in the
arm64 image under qemu-user-static. The invocations (test_invoke.py) run on
x86_64 (holdpoint_local.emulators.samlocal.ARCHITECTURE)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from holdpoint_local.emulators.samlocal import Built
from holdpoint_local.provision import REPO_ROOT

pytestmark = pytest.mark.timeout(2400)  # the first test builds the base images (arm64 under qemu: minutes)

EM_AARCH64 = 183


def elf_machine(path: Path) -> int:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", path
    return int.from_bytes(header[18:20], "little")


def runs_on_lambda(tag: str) -> bool:
    """A wheel tag Lambda's arm64 python3.13 loads: built for CPython 3.13, or for the stable ABI
    (`abi3`) from an earlier 3.x (cryptography ships only those), on aarch64."""
    built_for = re.match(r"^cp3(\d+)-(cp3\d+|abi3)-", tag)
    if built_for is None or not tag.endswith("aarch64"):
        return False
    minor, abi = int(built_for[1]), built_for[2]
    return (minor == 13 and abi == "cp313") or (abi == "abi3" and minor <= 13)


def test_the_layer_holds_the_arm64_wheels(arm64_build: Built) -> None:
    layer = arm64_build.build_dir / "CoreLayer" / "python"
    native = sorted(layer.rglob("*.so"))
    packages = {p.relative_to(layer).parts[0] for p in native}
    assert {"pydantic_core", "re2", "rpds"} <= packages | {p.name.split(".")[0] for p in native}, packages
    wrong = [str(p.relative_to(layer)) for p in native if elf_machine(p) != EM_AARCH64]
    assert wrong == [], wrong
    for wheel in layer.glob("*.dist-info/WHEEL"):
        text = wheel.read_text()
        if "Root-Is-Purelib: false" in text:
            tags = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]
            assert tags and all(runs_on_lambda(t) for t in tags), (wheel, tags)


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(requirements: Path) -> set[tuple[str, str]]:
    """(name, version) of each `name==version` line."""
    found = (re.match(r"^([A-Za-z0-9_.-]+)==(\S+)$", line.strip()) for line in requirements.read_text().splitlines())
    return {(normalized(m[1]), m[2]) for m in found if m}


def test_r30_the_layer_holds_exactly_the_pinned_versions_the_tests_run(arm64_build: Built) -> None:
    """Every package `sam build` put in the layer is pinned, at the version pinned, in the layer's
    requirements.txt, which pins what requirements.txt (the venvs the tests run in) pins."""
    layer = arm64_build.build_dir / "CoreLayer" / "python"
    shipped = {(normalized(d.name.removesuffix(".dist-info").rsplit("-", 1)[0]), d.name.removesuffix(".dist-info")
                .rsplit("-", 1)[1]) for d in layer.glob("*.dist-info")}
    assert shipped == pins(REPO_ROOT / "layers" / "core" / "requirements.txt") == pins(REPO_ROOT / "requirements.txt")


def test_the_arm64_wheels_import_in_the_arm64_image(arm64_image: str, arm64_build: Built) -> None:
    """The layer, read-only at /opt as Lambda mounts it, imported by the arm64 image's python3.13."""
    layer = arm64_build.build_dir / "CoreLayer"
    probe = ("import platform, pydantic_core, re2, rpds, holdpoint.core.schemas, jwt.algorithms; "
             "assert jwt.algorithms.has_crypto, 'PyJWT without cryptography: no RS256 or ES256'; "
             "print(platform.machine(), re2.compile('a+b').fullmatch('aab') is not None, pydantic_core.__version__)")
    done = subprocess.run(["docker", "run", "--rm", "--platform", "linux/arm64", "-v", f"{layer}:/opt:ro",
                           "-e", "PYTHONPATH=/opt/python", "--entrypoint", "/usr/bin/python3.13", arm64_image, "-c",
                           probe], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    machine, matched, _version = done.stdout.split()
    assert (machine, matched) == ("aarch64", "True"), done.stdout
