"""Each function of template.yaml, as `sam build` built it, invoked through `sam local start-lambda` in
an x86_64 Lambda-shaped container (holdpoint_local.emulators.samlocal says why x86_64), against the stack
provisioned in moto: the responses and what the table and queues hold
afterwards."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from holdpoint.aws.store import Store
from holdpoint_local.emulators.frontend import ApiGateway
from holdpoint_local.emulators.pollers import build_sqs_event
from holdpoint_local.emulators.samlocal import Invocation
from holdpoint_local.emulators.streams import lambda_record, matches
from holdpoint_local.emulators.wsgateway import read_live
from holdpoint_local.live_client import Follower
from holdpoint_local.provision import REPO_ROOT
from tests.waiting import wait_for

from .conftest import API_KEY, OPS_KEY, TENANT, Deployment

pytestmark = pytest.mark.timeout(2400)  # the first test builds the base images (arm64 under qemu: minutes)


def gateway(deployment: Deployment) -> ApiGateway:
    """The local stack's API Gateway (event shapes, authorizer, routes from the created HTTP API), with
    every function run in a container."""
    functions = {name: deployment.function(name) for name in deployment.provisioned.functions}
    return ApiGateway(deployment.provisioned.routes, functions, api_id=deployment.provisioned.api_id,  # type: ignore[arg-type]
                      cors=deployment.provisioned.cors)


def call(gw: ApiGateway, method: str, path: str, body: Any = None, key: str = API_KEY) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else b""
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json", "user-agent": "sam-tier"}
    response = gw.handle(method, path, headers, data)
    text = response["body"]
    kind = {k.lower(): v for k, v in response["headers"].items()}.get("content-type", "")
    is_json = kind.startswith("application/json")
    return response["statusCode"], (json.loads(text) if is_json else text) if text else None


AGENT = {"llm": {"provider": "scripted", "script": [{"when": {"role": "user"}, "reply": {"content": "Hi!"}}]},
         "a2a": {"public": True}}


def work_messages(deployment: Deployment) -> list[dict[str, Any]]:
    """What is on the work queue (received as the operator; the engine's event is built from them)."""
    sqs = deployment.client("sqs")
    out = sqs.receive_message(QueueUrl=deployment.provisioned.env["WORK_QUEUE_URL"], MaxNumberOfMessages=10,
                              AttributeNames=["All"], MessageAttributeNames=["All"], WaitTimeSeconds=1)
    return list(out.get("Messages", []))


def drain_work_queue(deployment: Deployment, until: Callable[[], bool], what: str) -> list[Invocation]:
    """Lambda's SQS poller for the engine, as the local stack runs it (emulators/pollers.py): each received
    batch is one engine invocation, and the records it does not report failed are deleted. Runs until
    `until()` holds (the messages Step Functions sends arrive from its own threads)."""
    sqs, url = deployment.client("sqs"), deployment.provisioned.env["WORK_QUEUE_URL"]
    arn = next(m.queue_arn for m in deployment.provisioned.sqs_mappings if m.function == "EngineFunction")
    runs: list[Invocation] = []

    def step() -> bool:
        messages = work_messages(deployment)
        if messages:
            run = deployment.invoke("EngineFunction", build_sqs_event(messages, arn))
            assert run.returncode == 0 and isinstance(run.response, dict), run.stderr[-4000:]
            failed = {f["itemIdentifier"] for f in run.response.get("batchItemFailures", [])}
            assert not failed, run.stderr[-4000:]
            for m in messages:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            runs.append(run)
        return until()

    wait_for(step, what, timeout=600)
    return runs


def table(deployment: Deployment) -> Store:
    return Store(deployment.provisioned.env["TABLE_NAME"], deployment.client("dynamodb"), cache=False)


@pytest.fixture(scope="module")
def api(deployment: Deployment) -> ApiGateway:
    return gateway(deployment)


@pytest.fixture(scope="module")
def done_session(deployment: Deployment, api: ApiGateway) -> str:
    """A session the api created and the engine answered."""
    status, body = call(api, "PUT", "/v1/agents/assistant", AGENT)
    assert status == 200, body
    status, body = call(api, "POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                                      "message": {"role": "user", "content": "hello"}})
    assert status == 202 and body["queued"] is False, body
    sid: str = body["session_id"]
    drain_work_queue(deployment, lambda: call(api, "GET", f"/v1/sessions/{sid}")[1]["status"] == "done",
                     "the engine answered the session")
    return sid


def test_a_session_is_created_by_the_api_and_answered_by_the_engine(deployment: Deployment, api: ApiGateway,
                                                                    done_session: str) -> None:
    """PUT agent and POST session ran in the api's containers (each behind the authorizer's); the
    engine's ran on the work queue's real kick. The table holds the agent and the answered session."""
    store = table(deployment)
    assert store.get_agent(TENANT, "assistant") is not None
    assert store.session_exists(TENANT, done_session)
    status, view = call(api, "GET", f"/v1/sessions/{done_session}")
    assert status == 200 and view["status"] == "done", view
    contents = [n["message"].get("content") for n in view["message_tree"]["nodes"]]
    assert contents == ["hello", "Hi!"], view
    assert not work_messages_left(deployment)


def test_an_operator_interrupt_parks_the_branch_and_the_resume_function_wakes_it(
        deployment: Deployment, api: ApiGateway, done_session: str) -> None:
    """api raises (R5), the engine parks it (ParkBranch RUNNING with its task token), the resume
    function clears it and the engine wakes the branch (the execution SUCCEEDED)."""
    sid = done_session
    status, raised = call(api, "POST", f"/v1/sessions/{sid}/interrupts", {"reason": "review"}, key=OPS_KEY)
    assert status == 200 and raised["noop"] is False, raised
    iid = raised["interrupt_id"]
    sfn = deployment.client("stepfunctions")
    machine = deployment.provisioned.env["PARK_STATE_MACHINE_ARN"]

    def executions(state: str) -> list[dict[str, Any]]:
        return list(sfn.list_executions(stateMachineArn=machine, statusFilter=state)["executions"])

    view = call(api, "GET", f"/v1/sessions/{sid}")[1]
    assert view["status"] == "interrupted" and [i["interrupt_id"] for i in view["interrupts"]] == [iid], view
    drain_work_queue(deployment, lambda: bool(executions("RUNNING")) and not work_messages_left(deployment),
                     "ParkBranch holds the branch")
    status, out = call(api, "POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", {"payload": {"ok": True}},
                       key=OPS_KEY)
    assert status == 200 and out == {"ok": True, "interrupt_id": iid, "noop": False}, out
    status, again = call(api, "POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", {"payload": {"ok": True}},
                         key=OPS_KEY)
    assert status == 200 and again["noop"] is True, again
    drain_work_queue(deployment, lambda: call(api, "GET", f"/v1/sessions/{sid}")[1]["interrupts"] == [],
                     "the branch woke")
    wait_for(lambda: executions("SUCCEEDED") and not executions("RUNNING"), "ParkBranch SUCCEEDED")
    assert table(deployment).session_exists(TENANT, sid)


def work_messages_left(deployment: Deployment) -> bool:
    attrs = deployment.client("sqs").get_queue_attributes(
        QueueUrl=deployment.provisioned.env["WORK_QUEUE_URL"],
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return any(int(v) for v in attrs.values())


def test_the_authorizer_refuses_an_unknown_key(deployment: Deployment, api: ApiGateway) -> None:
    status, body = call(api, "GET", "/v1/interrupts", key="hp_not_a_key")
    assert (status, body) == (403, {"message": "Forbidden"})
    status, listed = call(api, "GET", "/v1/interrupts")
    assert status == 200 and isinstance(listed.get("interrupts", listed.get("items")), list), listed


def test_links_channels_and_protocols_answer_their_routes(deployment: Deployment, api: ApiGateway,
                                                          done_session: str) -> None:
    """The three functions without the authorizer: a link token that is no token, Slack clicks that
    carry no Holdpoint action (refused before their signature is looked at), and the A2A agent card
    of the declared agent."""
    status, page = call(api, "GET", "/v1/links/not-a-token")
    assert 400 <= status < 500 and "invalid_link" in page, (status, page)
    form = {"content-type": "application/x-www-form-urlencoded"}
    response = api.handle("POST", "/v1/channels/slack/interactions", form, b"payload=%7B%7D")
    assert response["statusCode"] == 400 and "validation_error" in response["body"], response
    click = urllib.parse.urlencode({"payload": json.dumps({"type": "block_actions", "actions": []})}).encode()
    response = api.handle("POST", "/v1/channels/slack/interactions", form, click)
    assert response["statusCode"] == 400 and "the interaction has no Holdpoint action" in response["body"], response
    status, card = call(api, "GET", f"/a2a/{TENANT}/assistant/.well-known/agent-card.json")
    assert status == 200 and card.get("name"), card


def stream_batches(deployment: Deployment, function: str) -> list[list[dict[str, Any]]]:
    """The table's stream from its start, as the function's event source mapping hands it over
    (emulators/streams.py: Lambda's record shape, the mapping's FilterCriteria), in batches of its BatchSize."""
    mapping = next(m for m in deployment.provisioned.stream_mappings if m.function == function)
    streams = deployment.client("dynamodbstreams")
    kept: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=mapping.stream_arn)["StreamDescription"]["Shards"]:
        it = streams.get_shard_iterator(StreamArn=mapping.stream_arn, ShardId=shard["ShardId"],
                                        ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while it:
            page = streams.get_records(ShardIterator=it, Limit=1000)
            records = [lambda_record(r, mapping.stream_arn) for r in page.get("Records", [])]
            kept += [r for r in records if any(matches(f, r) for f in mapping.filters)]
            if not page.get("Records"):
                break
            it = page.get("NextShardIterator")
    return [kept[i:i + mapping.batch_size] for i in range(0, len(kept), mapping.batch_size)]


def test_the_notifier_publishes_the_interrupt_events_of_the_stream(
        deployment: Deployment, api: ApiGateway, done_session: str) -> None:
    """The stream's interrupt events (the operator interrupt above, or one raised here) go through
    the notifier's container to the bus; a rule the operator added routes them to a queue."""
    events, sqs = deployment.client("events"), deployment.client("sqs")
    bus = deployment.provisioned.env["EVENT_BUS_NAME"]
    queue = sqs.create_queue(QueueName=f"bus-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="all-holdpoint", EventBusName=bus, EventPattern=json.dumps({"source": ["holdpoint"]}))
    events.put_targets(Rule="all-holdpoint", EventBusName=bus, Targets=[{"Id": "q", "Arn": arn}])
    status, raised = call(api, "POST", f"/v1/sessions/{done_session}/interrupts", {"reason": "notify me"},
                          key=OPS_KEY)
    assert status == 200, raised
    batches = stream_batches(deployment, "NotifierFunction")
    assert batches, "the filter kept no record"
    for batch in batches:
        run = deployment.invoke("NotifierFunction", {"Records": batch})
        assert run.response == {"batchItemFailures": []}, run.stderr[-4000:]
    got: list[dict[str, Any]] = []

    def routed() -> set[str] | None:
        """What the queue holds so far: one receive may return fewer messages than the queue has."""
        got.extend(sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", []))
        kinds = {json.loads(m["Body"])["detail-type"] for m in got}
        return kinds if {"interrupt.raised", "interrupt.resolved"} <= kinds else None

    wait_for(routed, "the bus's interrupt.raised and interrupt.resolved on the queue", 60,
             describe=lambda: [json.loads(m["Body"])["detail-type"] for m in got])
    assert done_session in {json.loads(m["Body"])["detail"].get("session_id") for m in got}


def test_a_websocket_follower_connects_subscribes_and_gets_the_sessions_events(
        deployment: Deployment, api: ApiGateway, done_session: str) -> None:
    """$connect (behind the authorizer), subscribe and $disconnect through the live function's
    container; the subscription's answer and the events it replays come back through the management
    API the function posts to."""

    # SAM CLI creates a function's container on its first invoke (the image build and start took 20-40 s
    # here), longer than the follower's 30 s handshake timeout: the live function's first invoke is the
    # sample $disconnect of a connection that does not exist, answered 200.
    sample = json.loads((REPO_ROOT / "events" / "ws_disconnect.json").read_text())
    assert deployment.invoke("LiveFunction", sample).response == {"statusCode": 200}

    async def follow() -> tuple[str, dict[str, Any]]:
        async with Follower(deployment.live_url, API_KEY) as follower:
            await follower.follow(done_session)
            return await follower.next(timeout=120)

    sid, event = asyncio.run(follow())
    assert sid == done_session and event.get("seq"), event


def sample_target(deployment: Deployment, event: dict[str, Any]) -> str:
    """The function an events/*.json sample is for, from the created stack's wiring."""
    prov = deployment.provisioned
    live = read_live(deployment.moto_endpoint, prov)
    assert live is not None
    if "methodArn" in event:
        assert live.authorizer is not None
        return live.authorizer
    if event.get("type") == "REQUEST":
        return next(r.authorizer for r in prov.routes if r.route_key == event["routeKey"] and r.authorizer)
    if "routeKey" in event:
        return next(r.function for r in prov.routes if r.route_key == event["routeKey"])
    if "Records" in event:
        source = event["Records"][0]["eventSource"]
        if source == "aws:sqs":
            return next(m.function for m in prov.sqs_mappings)
        return next(m.function for m in prov.stream_mappings)
    return live.routes[event["requestContext"]["routeKey"]]


def test_every_event_sample_is_answered_by_its_function(deployment: Deployment) -> None:
    """events/*.json (what `sam local invoke -e` takes by hand) in their functions' containers: each
    answers in its event source's shape. Their ids (sess-1, the dev key) name nothing in this stack,
    so the answers are refusals and no-ops, but for the wake and the deadline timer of a session that
    does not exist: the engine fails the record, and a batch of which no record succeeded raises
    EntireBatchFailed (fifobatch.py), so that Lambda retries it (the kick of one is dropped)."""
    seen: dict[str, str] = {}
    for path in sorted((REPO_ROOT / "events").glob("*.json")):
        event = json.loads(path.read_text())
        function = sample_target(deployment, event)
        seen[path.name] = function
        run = deployment.invoke(function, event)
        answer = run.response
        if "methodArn" in event:  # the WebSocket authorizer: an unknown key is "Unauthorized" (401)
            assert answer.get("errorMessage") == "Unauthorized" or answer.get("policyDocument"), (path, answer)
            continue
        if answer.get("errorType") == "EntireBatchFailed":  # the engine's answer when no record of a batch
            assert function == "EngineFunction", (path.name, answer)  # succeeds: Lambda retries it
            seen[path.name] = "EngineFunction (EntireBatchFailed)"
            continue
        assert isinstance(answer, dict) and "errorType" not in answer, (path.name, answer, run.stderr[-3000:])
        if event.get("type") == "REQUEST":
            assert answer["isAuthorized"] is False, (path.name, answer)
        elif "Records" in event:
            assert isinstance(answer["batchItemFailures"], list), (path.name, answer)
        else:
            assert 200 <= int(answer["statusCode"]) < 500, (path.name, answer)
    assert set(seen.values()) >= {"ApiFunction", "ResumeFunction", "AuthorizerFunction", "EngineFunction",
                                  "NotifierFunction", "LiveFunction"}, seen
    assert seen["sqs_kick.json"] == "EngineFunction", seen
