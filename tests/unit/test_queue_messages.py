"""The work queue's messages (`core/messages.py`, carried as the queue adapter `aws/queue.py` writes
and reads them): every body template.yaml's state machines put on the queue, and every body a
durable timer's schedule sends, is one of the message classes, sent where the template lets it go;
each class survives the queue (to_queue, JSON, from_queue), and messages already queued by older
code still parse."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from holdpoint.aws.parking import Parking
from holdpoint.aws.queue import from_queue, group_id, to_queue
from holdpoint.aws.timers import Timers
from holdpoint.core import expiry
from holdpoint.core.errors import MessageError
from holdpoint.core.messages import (
    CLASSES,
    Deadline,
    InterruptTimer,
    Kick,
    NotifyRetry,
    Park,
    ParkRetry,
    Wake,
    WorkMessage,
    body,
    parse,
)
from holdpoint.core.state import Interrupt
from holdpoint_local.provision import load_template

TOKEN = "AQCEAAAAKgAAAAMAAAAA-example-task-token"
EXAMPLES: list[WorkMessage] = [
    Kick("t1", "s-1"),
    Park("t1", "s-1", "int-1", TOKEN, 2),
    Wake("t1", "s-1", "int-1", "expired", 2),
    Deadline("t1", "s-1", "call-1", 3),
    InterruptTimer("t1", "s-1", "int-1", 2, "escalate", 0),
    ParkRetry("t1", "s-1", "int-1", 2, 3),
    NotifyRetry("t1", "s-1", "evt-1#0", 2),
]


class Recording:
    """A Step Functions client that keeps each execution's input (what the state machine reads)."""

    def __init__(self) -> None:
        self.inputs: list[dict[str, Any]] = []

    def start_execution(self, stateMachineArn: str, name: str, input: str) -> dict[str, str]:  # noqa: N803, A002
        self.inputs.append(json.loads(input))
        return {"executionArn": f"{stateMachineArn}:{name}"}


def interrupt() -> Interrupt:
    return Interrupt("int-1", "tool", "confirm", None, "2025-01-01T00:00:00.000Z", "dedup-1", generation=2,
                     expires_in=600, remind_after=[60], escalate_after=300)


def park_inputs() -> list[dict[str, Any]]:
    """ParkBranch's input, as `Parking.start` writes it."""
    sfn = Recording()
    Parking("arn:aws:states:us-east-1:1:stateMachine:park", client=sfn).start("t1", "s-1", interrupt())
    return sfn.inputs


class Schedules:
    """A Scheduler client that keeps each CreateSchedule request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def create_schedule(self, **request: Any) -> dict[str, str]:
        self.requests.append(request)
        return {"ScheduleArn": f"arn:aws:scheduler:us-east-1:1:schedule/{request['GroupName']}/{request['Name']}"}


TIMER_ENV = {"TIMER_SCHEDULE_GROUP": {"Ref": "TimerScheduleGroup"},
             "TIMER_TARGET_ARN": {"Fn::GetAtt": ["WorkQueue", "Arn"]},
             "TIMER_ROLE_ARN": {"Fn::GetAtt": ["TimerSchedulerRole", "Arn"]}}
"""What `Timers` reads its group, target and role from, as template.yaml sets them."""


def timer_requests() -> list[dict[str, Any]]:
    """The schedules `Timers.schedule` asks for: one per kind a timer carries, the interrupt's
    reminders and escalation and a park's retry from their own producers."""
    scheduler = Schedules()
    timers = Timers("g", "arn:aws:sqs:us-east-1:1:work.fifo", "arn:aws:iam::1:role/timers", client=scheduler)
    for message in (Kick("t1", "s-1"), Deadline("t1", "s-1", "call-1", 1), NotifyRetry("t1", "s-1", "e#0", 2),
                    ParkRetry("t1", "s-1", "int-1", 2, 1)):
        timers.schedule(5, message, f"key/{message.KIND}")
    for timer in expiry.timers("t1", "s-1", interrupt()):
        timers.schedule(timer.seconds, timer.message, timer.key)
    return scheduler.requests


INPUTS = {"ParkBranchStateMachine": park_inputs}


def path(expr: str, data: dict[str, Any], context: dict[str, Any]) -> Any:
    """A reference path of the kind the templates use: `$.a.b` (the input) or `$$.Task.Token` (the context)."""
    root, rest = (context, expr[2:]) if expr.startswith("$$") else (data, expr[1:])
    assert rest == "" or rest.startswith("."), f"not a reference path: {expr}"
    value: Any = root
    for part in filter(None, rest.split(".")):
        value = value[part]
    return value


def fill(template: Any, data: dict[str, Any], context: dict[str, Any]) -> Any:
    """A Parameters value with its `.$` fields evaluated, as Step Functions sends it."""
    if not isinstance(template, dict):
        return template
    out = {}
    for key, value in template.items():
        if key.endswith(".$"):
            out[key[:-2]] = path(value, data, context)
        else:
            out[key] = fill(value, data, context)
    return out


def sends(definition: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every state (nested ones too) that puts a message on SQS, with its Parameters."""
    out = []
    for name, state in definition.get("States", {}).items():
        if "sqs:sendMessage" in str(state.get("Resource", "")):
            out.append((name, state["Parameters"]))
        for nested in [*state.get("Branches", []), *([state["Iterator"]] if "Iterator" in state else [])]:
            out.extend(sends(nested))
    return out


def template_messages(template: dict[str, Any]) -> dict[str, list[WorkMessage]]:
    """Each sending state's messages, filled from its state machine's example inputs and parsed."""
    out: dict[str, list[WorkMessage]] = {}
    machines = {k: r for k, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::StateMachine"}
    for logical_id, resource in machines.items():
        found = sends(resource["Properties"]["Definition"])
        if not found:
            continue
        assert logical_id in INPUTS, f"{logical_id} sends work messages: give it example inputs here"
        for data in INPUTS[logical_id]():
            for state, params in found:
                sent = fill({k: v for k, v in params.items() if k.startswith("MessageBody")}, data,
                            {"Task": {"Token": TOKEN}})["MessageBody"]
                out.setdefault(f"{logical_id}.{state}", []).append(from_queue(json.loads(json.dumps(sent))))
    return out


def test_messages_template_bodies_are_message_classes() -> None:
    got = template_messages(load_template())
    assert set(got) == {"ParkBranchStateMachine.Park", "ParkBranchStateMachine.Expire"}
    assert got["ParkBranchStateMachine.Park"] == [Park("t1", "s-1", "int-1", TOKEN, 2)]
    assert got["ParkBranchStateMachine.Expire"] == [Wake("t1", "s-1", "int-1", "expired", 2)]


def test_messages_timer_schedules_send_message_classes_to_the_work_queue() -> None:
    requests = timer_requests()
    assert [from_queue(json.loads(r["Target"]["Input"])) for r in requests] == [
        Kick("t1", "s-1"), Deadline("t1", "s-1", "call-1", 1), NotifyRetry("t1", "s-1", "e#0", 2),
        ParkRetry("t1", "s-1", "int-1", 2, 1),
        InterruptTimer("t1", "s-1", "int-1", 2, "remind", 0), InterruptTimer("t1", "s-1", "int-1", 2, "escalate", 0)]
    for r in requests:
        assert (r["GroupName"], r["ActionAfterCompletion"], r["FlexibleTimeWindow"]) == ("g", "DELETE", {"Mode": "OFF"})
        assert r["ScheduleExpression"].startswith("at(") and r["ScheduleExpressionTimezone"] == "UTC"
        assert len(r["Name"]) <= 64 and r["Name"].isalnum()
        target = r["Target"]
        assert (target["Arn"], target["RoleArn"]) == ("arn:aws:sqs:us-east-1:1:work.fifo", "arn:aws:iam::1:role/timers")
        assert target["SqsParameters"]["MessageGroupId"] == group_id("t1", "s-1")
        assert json.loads(target["Input"])["schedule"] == r["Name"]  # content-based deduplication: one per timer
    # The template sends them there: its group, the work queue (deduplicating on content, as
    # Scheduler gives no deduplication id) and a role Scheduler may assume that may send to it.
    resources = load_template()["Resources"]
    variables = load_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert {k: variables[k] for k in TIMER_ENV} == TIMER_ENV
    assert resources["TimerScheduleGroup"]["Type"] == "AWS::Scheduler::ScheduleGroup"
    assert resources["WorkQueue"]["Properties"]["ContentBasedDeduplication"] is True
    role = resources["TimerSchedulerRole"]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "scheduler.amazonaws.com"}
    [grant] = role["Policies"][0]["PolicyDocument"]["Statement"]
    assert (grant["Action"], grant["Resource"]) == ("sqs:SendMessage", {"Fn::GetAtt": ["WorkQueue", "Arn"]})
    assert not [k for k, r in resources.items() if k.startswith("Timer") and "StateMachine" in r["Type"]]


@pytest.mark.parametrize(("state", "field"), [("Park", "task_token.$"), ("Expire", "interrupt_id.$"),
                                              ("Expire", "outcome")])
def test_messages_template_check_catches_a_body_no_class_takes(state: str, field: str) -> None:
    template = copy.deepcopy(load_template())
    message = template["Resources"]["ParkBranchStateMachine"]["Properties"]["Definition"]["States"][state][
        "Parameters"]["MessageBody"]
    if field == "outcome":
        message[field] = "timed_out"
    else:
        message["x_" + field] = message.pop(field)
    with pytest.raises(MessageError):
        template_messages(template)


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: m.KIND)
def test_messages_round_trip_through_the_queue(message: WorkMessage) -> None:
    sent = json.dumps(to_queue(message))
    assert json.loads(sent)["kind"] == message.KIND
    assert from_queue(json.loads(sent)) == message
    assert parse(body(message)) == message  # the core's own codec, by the fields' names
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.tenant = "t2"  # type: ignore[misc]


def test_messages_a_park_carries_its_token_as_parkbranch_writes_it_and_only_there() -> None:
    """ParkBranch writes the token as `task_token` (template.yaml); the queue adapter alone knows it."""
    park = Park("t1", "s-1", "int-1", TOKEN, 2)
    assert to_queue(park) == {"kind": "park", "tenant": "t1", "session_id": "s-1", "interrupt_id": "int-1",
                              "task_token": TOKEN, "generation": 2}
    assert body(park)["token"] == TOKEN and "task_token" not in body(park)
    sent = {**to_queue(park), "token": "not-the-token"}  # a `token` key on the queue is no token
    assert from_queue(sent) == park
    with pytest.raises(MessageError, match="park message has no token"):
        from_queue({k: v for k, v in to_queue(park).items() if k != "task_token"})


def test_messages_every_class_has_an_example_and_its_own_kind() -> None:
    assert sorted(type(m).__name__ for m in EXAMPLES) == sorted(c.__name__ for c in CLASSES)
    assert len({c.KIND for c in CLASSES}) == len(CLASSES)


def test_messages_already_queued_by_older_code_still_parse() -> None:
    # ParkBranch executions started before it passed the generation on; a wake without an outcome.
    assert from_queue({"kind": "park", "tenant": "t1", "session_id": "s", "interrupt_id": "i", "task_token": "k"}) \
        == Park("t1", "s", "i", "k", None)
    assert from_queue({"kind": "wake", "tenant": "t1", "session_id": "s", "interrupt_id": "i"}) == \
        Wake("t1", "s", "i", "resumed", None)
    # Integers as the engine always read them (int()), and fields no class has are ignored.
    assert from_queue({"kind": "deadline", "tenant": "t1", "session_id": "s", "call_id": "c", "attempt": "2",
                       "extra": True}) == Deadline("t1", "s", "c", 2)
    assert from_queue({"kind": "wake", "tenant": "t1", "session_id": "s", "interrupt_id": "i",
                       "generation": None}) == Wake("t1", "s", "i")


@pytest.mark.parametrize(("data", "why"), [
    ({"kind": "nap", "tenant": "t1", "session_id": "s"}, "unknown work message kind 'nap'"),
    ({"tenant": "t1", "session_id": "s"}, "unknown work message kind None"),
    ({"kind": "kick", "tenant": "t1"}, "kick message has no session_id"),
    ({"kind": "deadline", "tenant": "t1", "session_id": "s", "call_id": "c", "attempt": "x"}, "attempt must be"),
    ({"kind": "deadline", "tenant": "t1", "session_id": "s", "call_id": "c", "attempt": True}, "attempt must be"),
    ({"kind": "park", "tenant": "t1", "session_id": "s", "interrupt_id": 7, "task_token": "k"}, "interrupt_id must"),
    ({"kind": "interrupt_timer", "tenant": "t1", "session_id": "s", "interrupt_id": "i", "generation": 0,
      "timer": "nag", "index": 0}, "timer must be one of"),
])
def test_messages_a_body_no_class_takes_is_refused_by_name(data: dict[str, Any], why: str) -> None:
    with pytest.raises(MessageError, match=why.replace("(", r"\(")):
        from_queue(data)
