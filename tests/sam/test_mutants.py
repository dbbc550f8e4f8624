"""The container tier catches what the in-process local stack cannot: each mutant is a throwaway
function in a throwaway template (the repo's layer, minus one pin where that is the mutant), built by
`sam build` and invoked by `sam local invoke` as test_invoke.py invokes the real ones."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from holdpoint_local.emulators.samlocal import ARCHITECTURE, Built, Invocation, build, compile_bytecode
from holdpoint_local.provision import REPO_ROOT

from .conftest import sam_invoke

pytestmark = pytest.mark.timeout(2400)  # the first test builds the base images (arm64 under qemu: minutes)

DROPPED_PIN = "PyJWT"
HANDLERS = {
    # imports a package only requirements-dev.txt installs (the dev venv has it, the layer does not)
    "DevOnly": "import moto\n\ndef handler(event, context):\n    return {'moto': moto.__version__}\n",
    # imports the package whose pin the mutant layer lacks
    "MissingWheel": "import jwt\n\ndef handler(event, context):\n    return {'jwt': jwt.__version__}\n",
    # writes next to its code, as a handler caching a file would (Lambda: read-only outside /tmp)
    "WritesTask": ("def handler(event, context):\n    open('/var/task/cache.json', 'w').write('{}')\n"
                   "    return {'wrote': True}\n"),
    "WritesOpt": ("def handler(event, context):\n    open('/opt/cache.json', 'w').write('{}')\n"
                  "    return {'wrote': True}\n"),
    "WritesTmp": ("def handler(event, context):\n    open('/tmp/cache.json', 'w').write('{}')\n"
                  "    return {'wrote': True}\n"),
    # runs past the 1 s timeout its template gives it
    "Slow": "import time\n\ndef handler(event, context):\n    time.sleep(5)\n    return {'late': True}\n",
}


def template(architecture: str) -> str:
    functions = "".join(f"""
  {name}:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/{name.lower()}
      Timeout: {1 if name == "Slow" else 10}
""" for name in HANDLERS)
    return f"""AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: python3.13
    Architectures: [{architecture}]
    Handler: app.handler
    MemorySize: 256
    Layers:
      - !Ref CoreLayer
Resources:
  CoreLayer:
    Type: AWS::Serverless::LayerVersion
    Properties:
      ContentUri: layers/core
      CompatibleRuntimes: [python3.13]
    Metadata:
      BuildMethod: python3.13
      BuildArchitecture: {architecture}
{functions}"""


@pytest.fixture(scope="module")
def mutants(tmp_path_factory: pytest.TempPathFactory, base_image: str) -> Built:
    """The throwaway project: the repo's layer with the PyJWT pin dropped, and one function per mutant."""
    root = tmp_path_factory.mktemp("mutants")
    layer = root / "layers" / "core"
    shutil.copytree(REPO_ROOT / "layers" / "core", layer, ignore=shutil.ignore_patterns("__pycache__"))
    pins = (layer / "requirements.txt").read_text().splitlines()
    kept = [line for line in pins if not line.startswith(f"{DROPPED_PIN}==")]
    assert len(kept) == len(pins) - 1, "the layer no longer pins PyJWT"
    (layer / "requirements.txt").write_text("\n".join(kept) + "\n")
    for name, code in HANDLERS.items():
        code_dir = root / "functions" / name.lower()
        code_dir.mkdir(parents=True)
        (code_dir / "app.py").write_text(code)
    (root / "template.yaml").write_text(template(ARCHITECTURE))
    build_dir = root / "build"
    build(root / "template.yaml", build_dir, base_dir=root)
    compile_bytecode(build_dir)
    return Built(build_dir, build_dir / "template.yaml", 0.0)


def run(mutants: Built, bridge_host: str, name: str) -> Invocation:
    return sam_invoke(mutants.build_dir, mutants.template, name, {}, host=bridge_host)


def error_of(invocation: Invocation) -> tuple[str, str]:
    response: Any = invocation.response
    assert isinstance(response, dict) and "errorType" in response, (response, invocation.stderr[-3000:])
    return str(response["errorType"]), str(response.get("errorMessage", ""))


def test_a_handler_importing_a_dev_only_package_fails(mutants: Built, bridge_host: str) -> None:
    assert error_of(run(mutants, bridge_host, "DevOnly")) == (
        "Runtime.ImportModuleError", "Unable to import module 'app': No module named 'moto'")


def test_a_wheel_missing_from_the_layer_fails(mutants: Built, bridge_host: str) -> None:
    assert not (mutants.build_dir / "CoreLayer" / "python" / "jwt").exists()
    assert error_of(run(mutants, bridge_host, "MissingWheel")) == (
        "Runtime.ImportModuleError", "Unable to import module 'app': No module named 'jwt'")


def test_a_write_to_the_code_directory_fails(mutants: Built, bridge_host: str) -> None:
    """SAM CLI mounts the function's code read-only at /var/task, as Lambda has it; /tmp is writable."""
    kind, message = error_of(run(mutants, bridge_host, "WritesTask"))
    assert kind == "OSError" and "Read-only file system" in message, message
    assert run(mutants, bridge_host, "WritesTmp").response == {"wrote": True}


def test_gap_a_write_to_the_layer_directory_is_not_caught(mutants: Built, bridge_host: str) -> None:
    """Written down, not hidden: SAM CLI bakes the layer into the image at /opt and starts the
    container with a writable root, where Lambda's whole file system but /tmp is read-only. A handler
    writing under /opt (or /var, /home) passes here and fails on AWS."""
    assert run(mutants, bridge_host, "WritesOpt").response == {"wrote": True}


def test_a_handler_over_its_timeout_fails(mutants: Built, bridge_host: str) -> None:
    """SAM CLI stops the container at the template's Timeout: no answer (its exit code stays 0)."""
    slow = run(mutants, bridge_host, "Slow")
    assert slow.response is None, slow.response
    assert "Function 'Slow' timed out after 1 seconds" in slow.stderr, slow.stderr[-3000:]
