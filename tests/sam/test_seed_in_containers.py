"""The seed scenario on the built artifact: the local stack with `invoke="sam"` (its HTTP and WebSocket
front ends, SQS pollers and stream readers calling every function through `sam local start-lambda`,
each in its container), and `make demo`'s send_email interrupt end to end, approved and declined.
Then one flow each of approvals (a policy naming its approver), streaming (a WebSocket follower),
A2A (the official SDK's client) and notifications (a signed webhook, its one-click link) on the
same stack, and the seed scenario once more through SAM CLI's own HTTP API emulation (`sam local
start-api`)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format

from holdpoint import assembly
from holdpoint.aws.keys import put_api_key
from holdpoint_local import ACCOUNT_ID, REGION, demo
from holdpoint_local.emulators import samlocal
from holdpoint_local.emulators.samlocal import Built, ContainerFunction, LambdaEndpoint
from holdpoint_local.live_client import Follower
from holdpoint_local.moto.server import MotoServer, set_invoke_endpoint
from holdpoint_local.provision import REPO_ROOT
from holdpoint_local.stack import LocalStack
from tests.e2e.test_notify_e2e import Receiver
from tests.stack import seed_worker
from tests.waiting import wait_for

from .conftest import fail_unavailable

pytestmark = pytest.mark.timeout(2400)
CUSTOMER_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:customer-receiver"
"""The customer's function a run's `lambda` target invokes (tests/sam/customer/)."""


@pytest.fixture(scope="module")
def sam_stack(docker_engine: object, base_image: str, sam_build: Built,
              moto_server: MotoServer) -> Iterator[LocalStack]:
    saved = dict(os.environ)
    os.environ[demo.SECRET_ENV] = secrets.token_hex(16)  # the containers are told it at start
    stack = LocalStack(moto_endpoint=moto_server.endpoint, stack_name=f"s{uuid.uuid4().hex[:8]}", http_port=0,
                       invoke="sam", sam_build=sam_build, parameters={"WorkerLambdaArnPattern": CUSTOMER_ARN})
    try:
        stack.start()
    except Exception as exc:
        stack.stop(keep_moto=True)
        from holdpoint_local.containers import Unavailable

        if isinstance(exc, Unavailable):
            fail_unavailable(exc)
        raise
    yield stack
    stack.stop(keep_moto=True)
    os.environ.clear()
    os.environ.update(saved)
    assembly.reset()


def test_every_function_of_the_stack_runs_in_its_container(sam_stack: LocalStack) -> None:
    assert sam_stack.functions and all(isinstance(f, ContainerFunction) for f in sam_stack.functions.values())
    assert sam_stack.host != "127.0.0.1"  # the functions reach this machine on Docker's bridge


def test_the_seed_scenario_parks_and_resumes_approved_and_declined(sam_stack: LocalStack) -> None:
    seen = demo.run(sam_stack)  # raises SystemExit, naming what it saw, when a step does not happen
    resumed = [r["trigger"]["payload"] for r in seen if r["trigger"]["type"] == "interrupt.resumed"]
    assert resumed == [{"approved": True}, {"approved": False}], resumed
    called = {f.name: f.invocations for f in sam_stack.functions.values()}
    for name in ("ApiFunction", "AuthorizerFunction", "EngineFunction", "ResumeFunction"):
        assert called[name] > 0, called
    reports = sam_stack.containers.reports if sam_stack.containers else []
    assert any(r.function == "EngineFunction" and r.duration_ms for r in reports), "no REPORT line from the engine"


@pytest.fixture(scope="module")
def seed_agent(sam_stack: LocalStack) -> Iterator[tuple[demo.Client, list[dict[str, Any]]]]:
    """The demo's agent with the seed worker on the bridge address, its A2A card public."""
    worker, seen = seed_worker.serve(0, os.environ[demo.SECRET_ENV], host=sam_stack.host)
    client = demo.Client(sam_stack.base_url, sam_stack.api_key)
    agent = demo.agent(f"http://{sam_stack.host}:{worker.server_address[1]}/")
    client.call("PUT", "/v1/agents/assistant", {**agent, "a2a": {"public": True, "name": "Assistant"}})
    yield client, seen
    worker.shutdown()
    worker.server_close()


def start(client: demo.Client) -> tuple[str, str]:
    """A session parked on the worker's send_email interrupt: its id and the interrupt's."""
    sid = client.call("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                               "message": {"role": "user", "content": "Email Bob."}})["session_id"]
    [interrupt] = client.wait(sid, "interrupted", timeout=120)["interrupts"]
    return sid, interrupt["interrupt_id"]


def test_a_policy_naming_its_approver_refuses_another_and_takes_its_answer(
        sam_stack: LocalStack, seed_agent: tuple[demo.Client, list[dict[str, Any]]]) -> None:
    client, seen = seed_agent
    agent = client.call("GET", "/v1/agents/assistant")["agent"]
    client.call("PUT", "/v1/agents/assistant", {**agent, "approval": {"subjects": ["ops"]}})
    key = f"hp_sam_ops_{uuid.uuid4().hex[:8]}"
    put_api_key(sam_stack.env["TABLE_NAME"], key, sam_stack.tenant, "ops", "operator",
                client=sam_stack.client("dynamodb"))
    try:
        sid, iid = start(client)
        path = f"/v1/sessions/{sid}/interrupts/{iid}/resume"
        refused = client.call("POST", path, {"payload": {"approved": True}}, ok=(403,))
        assert refused["error"]["code"] == "not_an_approver", refused
        ops = demo.Client(sam_stack.base_url, key)
        assert ops.call("POST", path, {"payload": {"approved": True}})["noop"] is False
        view = client.wait(sid, "done", timeout=120)
        assert view["messages"][-1]["content"] == "Done: the email to Bob is sent."
        assert [r["trigger"]["payload"] for r in seen if r["session_id"] == sid
                and r["trigger"]["type"] == "interrupt.resumed"] == [{"approved": True}]
    finally:
        client.call("PUT", "/v1/agents/assistant", agent)


def test_a_websocket_follower_gets_a_sessions_events_from_the_live_function(
        sam_stack: LocalStack, seed_agent: tuple[demo.Client, list[dict[str, Any]]]) -> None:
    client, _ = seed_agent
    # SAM CLI creates the live function's container on its first invoke (20-40 s here), which the
    # gateway's 29 s for `$connect` may not cover: a $disconnect of no connection (answered 200) creates it first.
    sample = json.loads((REPO_ROOT / "events" / "ws_disconnect.json").read_text())
    assert sam_stack.functions["LiveFunction"].invoke(sample) == {"statusCode": 200}
    sid, iid = start(client)
    live = sam_stack.live
    assert live is not None

    async def follow() -> list[str]:
        async with Follower(live.url, sam_stack.api_key) as follower:
            await follower.follow(sid)
            client.call("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", {"payload": {"approved": False}})
            types: list[str] = []
            while "turn.finished" not in types:
                _, event = await follower.next(timeout=120)
                types.append(event["type"])
            return types

    types = asyncio.run(follow())
    parked = {"session.interrupted", "session.interrupt_resumed"}
    assert types[0] == "session.created" and parked <= set(types) and types[-1] == "turn.finished", ", ".join(types)


def test_an_a2a_client_completes_a_task_through_input_required(
        sam_stack: LocalStack, seed_agent: tuple[demo.Client, list[dict[str, Any]]]) -> None:
    async def go() -> tuple[pb.Task, pb.Task]:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {sam_stack.api_key}"}, timeout=120) as http:
            a2a = await ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create_from_url(
                f"{sam_stack.base_url}/a2a/{sam_stack.tenant}/assistant")
            ask = pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text="Email Bob")])
            parked = [e.task async for e in a2a.send_message(pb.SendMessageRequest(message=ask))][0]
            data = json_format.ParseDict({"data": {"approved": True}}, pb.Part())
            answer = pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[data],
                                task_id=parked.id, context_id=parked.context_id)
            last = parked
            async for event in a2a.send_message(pb.SendMessageRequest(message=answer)):
                if event.HasField("task"):
                    last = event.task
                elif event.HasField("status_update"):
                    last.status.CopyFrom(event.status_update.status)
            return parked, last

    parked, done = asyncio.run(go())
    assert parked.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert done.status.state == pb.TASK_STATE_COMPLETED, done.status
    wait_for(lambda: seed_agent[0].call("GET", f"/v1/sessions/{parked.context_id}")["status"] == "done",
             "the A2A task's session to be done")


def test_a_webhook_hears_the_raise_and_its_link_resolves_it_through_the_links_function(
        sam_stack: LocalStack, seed_agent: tuple[demo.Client, list[dict[str, Any]]]) -> None:
    """Notifications: the table's stream through the notifier's container posts a signed webhook
    for the raise; its one-click link resumes through the links function's; the resolve follows."""
    client, seen = seed_agent
    receiver = Receiver(os.environ[demo.SECRET_ENV], host=sam_stack.host)
    agent = client.call("GET", "/v1/agents/assistant")["agent"]
    entry = {"url": receiver.url, "secret": f"env:{demo.SECRET_ENV}", "events": ["interrupt.raised",
                                                                               "interrupt.resolved"]}
    client.call("PUT", "/v1/agents/assistant", {**agent, "notify": [entry]})
    try:
        sid, iid = start(client)
        [hook] = wait_for(lambda: receiver.of("interrupt.raised") or None, "the raised webhook", timeout=180)
        assert hook["signed"] and hook["body"]["interrupt_id"] == iid, hook
        done = requests.post(hook["body"]["links"]["approve"], data={"confirm": "approve"}, timeout=120)
        assert done.status_code == 200 and "recorded" in done.text, done.text[:500]
        assert client.wait(sid, "done", timeout=120)["messages"][-1]["content"] == "Done: the email to Bob is sent."
        wait_for(lambda: receiver.of("interrupt.resolved") or None, "the resolved webhook", timeout=180)
        assert [r["trigger"]["payload"] for r in seen if r["session_id"] == sid
                and r["trigger"]["type"] == "interrupt.resumed"] == [{"approved": True}]
    finally:
        client.call("PUT", "/v1/agents/assistant", agent)
        receiver.server.shutdown()
        receiver.server.server_close()


def test_the_seed_scenario_through_sam_local_start_api(
        sam_stack: LocalStack, seed_agent: tuple[demo.Client, list[dict[str, Any]]]) -> None:
    """SAM CLI's own HTTP API emulation (its routes and Lambda authorizer) in front of the same
    functions: the seed scenario passes through it. What it answers differently from API Gateway's
    HTTP API (and the local front end, which answers as API Gateway does) is asserted, so a change
    in SAM CLI shows here: local/README.md, "The HTTP API through sam local start-api"."""
    assert sam_stack.containers is not None
    base = sam_stack.containers.start_api().url
    client = demo.Client(base, sam_stack.api_key)
    demo.run_once(sam_stack, client, approved=True)
    assert seed_agent[1], "the worker answered nothing"
    key = {"Authorization": f"Bearer {sam_stack.api_key}"}
    front = sam_stack.base_url
    for url in (base, front):
        assert requests.get(f"{url}/v1/sessions", timeout=120).status_code == 401  # no Authorization: both
    refused = requests.get(f"{base}/v1/sessions", headers={"Authorization": "Bearer hp_nope"}, timeout=120)
    assert (refused.status_code, refused.json()) == (403, {"message": "User is not authorized to access this resource"})
    assert requests.get(f"{front}/v1/sessions", headers={"Authorization": "Bearer hp_nope"},
                        timeout=120).json() == {"message": "Forbidden"}
    unknown = requests.get(f"{base}/v1/nothing", headers=key, timeout=120)
    assert (unknown.status_code, unknown.json()) == (403, {"message": "Missing Authentication Token"})
    assert requests.get(f"{front}/v1/nothing", headers=key, timeout=120).status_code == 404
    preflight = {"Origin": "http://127.0.0.1:8787", "Access-Control-Request-Method": "POST"}
    sam_cors = requests.options(f"{base}/v1/sessions", headers=preflight, timeout=120)
    assert sam_cors.status_code == 200 and "Access-Control-Allow-Origin" not in sam_cors.headers


def container_env(function: str) -> dict[str, str]:
    """The environment of the running container of `function` (the variables Docker gave it)."""
    ids = subprocess.run(["docker", "ps", "-q"], capture_output=True, text=True, check=True).stdout.split()
    for cid in ids:
        raw = subprocess.run(["docker", "inspect", "-f", "{{json .Config.Env}}", cid], capture_output=True,
                             text=True, check=True).stdout
        env = dict(item.split("=", 1) for item in json.loads(raw))
        if env.get("AWS_LAMBDA_FUNCTION_NAME") == function:
            return env
    raise AssertionError(f"no running container of {function}")


def test_r42_each_container_gets_its_template_environment_and_nothing_else(sam_stack: LocalStack) -> None:
    """On AWS a function has only what template.yaml declares for it: the links function no other
    function's URL, the authorizer no worker secret. Read inside the running containers."""
    assert requests.get(f"{sam_stack.base_url}/v1/links/not-a-token", timeout=120).status_code == 400  # links
    assert requests.get(f"{sam_stack.base_url}/v1/sessions", timeout=120,  # the authorizer
                        headers={"Authorization": f"Bearer {sam_stack.api_key}"}).status_code == 200
    declared = {name: spec.env for name, spec in (sam_stack.provisioned.functions.items()
                                                  if sam_stack.provisioned else [])}
    for function in ("LinksFunction", "AuthorizerFunction"):
        env = wait_for(lambda f=function: container_env(f), f"the container of {function}")
        ours = {k for k in env if k.startswith("HOLDPOINT_")}
        assert ours <= set(declared[function]) | {"HOLDPOINT_ALLOW_HTTP_WORKERS"}, ours - set(declared[function])
        assert not any(k.endswith("WORKER_SECRET") for k in env), function
        assert "HOLDPOINT_PUBLIC_API_URL" not in env and "HOLDPOINT_LINK_BASE_URL" not in env  # others' own


def test_r42_a_container_on_another_network_reaches_neither_aws_nor_the_gateway(
        sam_stack: LocalStack, base_image: str) -> None:
    """The relay to moto and the WebSocket gateway listen on the stack network's gateway and take
    its containers alone: a container on Docker's default bridge is cut off at once."""
    assert sam_stack.containers and sam_stack.containers.relay and sam_stack.live
    relay, live = sam_stack.containers.relay, sam_stack.live
    probe = ("import socket, sys\n"
             "for port, ask in ((int(sys.argv[2]), b'GET / HTTP/1.0\\r\\n\\r\\n'),\n"
             "                  (int(sys.argv[3]), b'GET /live HTTP/1.1\\r\\nHost: x\\r\\nUpgrade: websocket\\r\\n'\n"
             "                   b'Connection: Upgrade\\r\\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\\r\\n'\n"
             "                   b'Sec-WebSocket-Version: 13\\r\\n\\r\\n')):\n"
             "    s = socket.create_connection((sys.argv[1], port), timeout=20)\n"
             "    s.sendall(ask)\n"
             "    try:\n"
             "        print(port, repr(s.recv(200)[:12]))\n"
             "    except OSError as e:\n"
             "        print(port, 'error', type(e).__name__)\n")
    python = "/usr/bin/python3.13"  # the base image's (its entry point is the Lambda runtime's bootstrap)
    done = subprocess.run(["docker", "run", "--rm", "--network", "bridge", "--entrypoint", python, base_image,
                           "-c", probe, relay.host, str(relay.port), str(live.port)],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] in (f"{relay.port} b''", f"{relay.port} error ConnectionResetError"), lines  # closed: no AWS
    assert lines[1] == f"{live.port} b'HTTP/1.1 403'", lines  # the gateway refuses the handshake


@pytest.fixture(scope="module")
def customer(sam_stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LambdaEndpoint]:
    """The customer's function (tests/sam/customer/, the SDK its one requirement) built by `sam build`
    and served by its own `sam local start-lambda`; moto hands the invokes it is asked for there (fix 30)."""
    work = tmp_path_factory.mktemp("customer")
    source = work / "source"
    shutil.copytree(Path(__file__).parent / "customer", source)
    (source / "requirements.txt").write_text(f"holdpoint-sdk @ file://{REPO_ROOT / 'sdk'}\n")
    samlocal.build(source / "template.yaml", work / "build", base_dir=source)
    functions = LambdaEndpoint(Built(work / "build", work / "build" / "template.yaml", 0.0), {}, sam_stack.host,
                               work / "start-lambda.log").start()
    set_invoke_endpoint(str(sam_stack.moto_endpoint), f"http://127.0.0.1:{functions.port}")
    yield functions
    set_invoke_endpoint(str(sam_stack.moto_endpoint), None)
    functions.stop()


def taken(functions: LambdaEndpoint, run_id: str) -> list[dict[str, Any]]:
    """What the customer's function printed it took for `run_id`."""
    lines = functions.log_path.read_text(errors="replace").splitlines()
    found = [json.loads(line.split("TOOK ", 1)[1]) for line in lines if "TOOK " in line]
    return [t for t in found if t["run_id"] == run_id]


def test_a_runs_lambda_target_is_invoked_with_the_answers_from_the_notifiers_container(
        sam_stack: LocalStack, customer: LambdaEndpoint) -> None:
    """A run's `lambda` target, with Holdpoint's functions in their containers: the notifier's
    container invokes the customer's function (asynchronously, through moto, authorised as
    lambda:InvokeFunction on its ARN by the grant WorkerLambdaArnPattern gives), which runs in its
    own container and takes the delivery with the SDK, once."""
    client = demo.Client(sam_stack.base_url, sam_stack.api_key)
    client.call("PUT", "/v1/agents/mailer", {"run_targets": {"inbox": {"lambda": CUSTOMER_ARN}}})
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    raised = client.call("POST", f"/v1/runs/{run_id}/interrupts", {
        "agent_id": "mailer", "target": "inbox", "interrupts": [{
            "interrupt_id": "send", "reason": "approval", "payload": {"message": "Send the email to Bob?"},
            "action": {"tool": "send_email", "arguments": {"to": "bob"}}}]})
    client.call("POST", f"/v1/sessions/{raised['session_id']}/interrupts/send/resume",
                {"payload": {"approved": True}})

    def took_it() -> list[dict[str, Any]]:
        return taken(customer, run_id)

    [took] = wait_for(took_it, "the customer's function to take the delivery", 300,
                      describe=lambda: customer.log_path.read_text(errors="replace")[-3000:])
    assert took["verdicts"] == ["approved"]
