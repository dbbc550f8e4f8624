"""What `make deploy` uploads is what the container tier runs: `sam build`'s artifact with its modules
compiled to bytecode (holdpoint_local/deploy/bytecode.py), zipped by the SAM CLI's own packager as
`sam deploy` zips it (every entry dated 1980-01-01), and unzipped where Lambda puts it. Every
function's handler then loads in the Lambda-shaped container from its .pyc alone: each source in the
unzipped artifact is replaced by one that stops the import, so a module compiled from its source on
the cold start fails the load. Bytecode checked against its source's timestamp (Python's default)
fails it, which is why the step compiles with `unchecked-hash`."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from holdpoint_local import LAMBDA_ENV
from holdpoint_local.deploy import bytecode
from holdpoint_local.emulators.samlocal import SAM, Built

pytestmark = pytest.mark.timeout(1200)

DATED_1980 = 315532800  # 1980-01-01T00:00:00Z: SAM's zip entries carry no date of their own
STOP = 'raise SystemExit("compiled from its source on the cold start: " + __file__)\n'


def sam_zip(source: Path, out: Path) -> Path:
    """`source` zipped by the pinned SAM CLI's packager (samcli.lib.package.utils.make_zip)."""
    code = "import sys\nfrom samcli.lib.package.utils import make_zip\nprint(make_zip(sys.argv[1], sys.argv[2]))\n"
    done = subprocess.run([str(SAM.parent / "python"), "-c", code, str(out), str(source)], capture_output=True,
                          text=True, timeout=300, check=True)
    return Path(done.stdout.strip())


def unzipped(archive: Path, into: Path) -> Path:
    """The archive unpacked with its entries' dates, and every source replaced by `STOP`."""
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(into)
    for path in into.rglob("*"):
        if path.suffix == ".py":
            path.write_text(STOP)
        if path.is_file():
            os.utime(path, (DATED_1980, DATED_1980))
    return into


def load(image: str, task: Path, opt: Path) -> subprocess.CompletedProcess[str]:
    """`import app` as the runtime loads a handler: /var/task and /opt read-only, no network."""
    variables = {**LAMBDA_ENV, "PYTHONPATH": "/var/task:/opt/python", "LAMBDA_TASK_ROOT": "/var/task"}
    cmd = ["docker", "run", "--rm", "--network", "none", "-v", f"{task}:/var/task:ro", "-v", f"{opt}:/opt:ro",
           "-w", "/var/task", *[a for k, v in variables.items() for a in ("-e", f"{k}={v}")],
           "--entrypoint", "/usr/bin/python3.13", image, "-S", "-c", "import app"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def deployed(sam_build: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The compiled build, each function and the layer zipped as `sam deploy` zips them, and unzipped."""
    out = tmp_path_factory.mktemp("deployed")
    for part in sorted(p for p in sam_build.build_dir.iterdir() if p.is_dir()):
        unzipped(sam_zip(part, out / f"{part.name}-zip"), out / part.name)
    return out


def functions(built: Path) -> list[str]:
    return sorted(p.name for p in built.iterdir() if p.name.endswith("Function") and p.is_dir())


def test_r30_every_function_loads_its_handler_from_the_bytecode_sam_deploy_uploads(
        deployed: Path, sam_build: Built, base_image: str) -> None:
    names = functions(sam_build.build_dir)
    assert len(names) == 9, names
    layer = deployed / "CoreLayer" / "python"
    assert list(layer.rglob("holdpoint/__pycache__/*.pyc")) and all(p.read_text() == STOP for p in layer.rglob("*.py"))
    for name in names:
        done = load(base_image, deployed / name, deployed / "CoreLayer")
        assert done.returncode == 0, (name, done.stderr[-2000:])


UNZIPPED_LIMIT = 262_144_000
"""Lambda's quota on a function's unzipped code with all its layers (250 MB): a deploy past it is refused."""


def test_r30_each_function_with_the_compiled_layer_fits_lambdas_unzipped_limit(sam_build: Built) -> None:
    def size(path: Path) -> int:
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())

    layer = size(sam_build.build_dir / "CoreLayer")
    for name in functions(sam_build.build_dir):
        assert layer + size(sam_build.build_dir / name) < UNZIPPED_LIMIT, name


def test_r30_bytecode_checked_against_its_sources_timestamp_is_compiled_again(
        deployed: Path, sam_build: Built, base_image: str, tmp_path: Path) -> None:
    """The mutant the check must catch: the resume function compiled with Python's default invalidation
    (its source's timestamp), zipped and unzipped the same way, reads its source on the load."""
    task = tmp_path / "ResumeFunction"
    task.mkdir()
    (task / "app.py").write_bytes((sam_build.build_dir / "ResumeFunction" / "app.py").read_bytes())
    python = SAM.parent / bytecode.RUNTIME
    subprocess.run([str(python), "-m", "compileall", "-q", str(task)], check=True, timeout=120)
    assert list((task / "__pycache__").glob("app.*.pyc"))
    mutant = unzipped(sam_zip(task, tmp_path / "mutant-zip"), tmp_path / "mutant")
    done = load(base_image, mutant, deployed / "CoreLayer")
    assert done.returncode != 0 and "compiled from its source on the cold start: /var/task/app.py" in done.stderr, (
        done.stderr[-2000:])


def test_the_built_layer_ships_no_in_memory_twins(sam_build: Built) -> None:
    """The in-memory adapters are for tests and the local stack (`holdpoint_local.memory`): the layer
    `sam build` makes holds the product's package and its dependencies, not the fakes."""
    layer = sam_build.build_dir / "CoreLayer" / "python"
    assert (layer / "holdpoint" / "core").is_dir() and (layer / "holdpoint" / "aws").is_dir()
    assert not list(layer.rglob("memory/store.py")) and not list(layer.rglob("holdpoint_local"))
