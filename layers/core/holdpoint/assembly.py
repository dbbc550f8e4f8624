"""The services, assembled on the AWS adapters: what the entry points (Lambda handlers, the admin
CLI, the local stack and the tests that run the real thing) build and share.

One idiom for every container-wide object: a cached factory, built on first use. Each factory
imports its adapters when called, so an entry point loads only what it builds (a resume Lambda
never imports the LLM providers).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from holdpoint.aws.leases import WaitLeases
    from holdpoint.aws.parking import Parking
    from holdpoint.aws.pushconfigs import PushConfigLog
    from holdpoint.aws.queue import WorkQueue
    from holdpoint.aws.receipts import KmsReceiptKeys
    from holdpoint.aws.store import Store
    from holdpoint.aws.timers import Timers
    from holdpoint.aws.traces import XRayTraces
    from holdpoint.notify.channels import SlackChannel
    from holdpoint.notify.service import Notifier
    from holdpoint.services.live import Live
    from holdpoint.services.runner import Runner


@cache
def get_store() -> Store:
    """The container's store: one table behind the three store ports (`ports.Sessions`,
    `Interrupts`, `Directory`), one object every service is given for the ones it reads. With a
    WebSocket API (`HOLDPOINT_LIVE_ENDPOINT`) every commit's events go to the session's
    connections right after it (services/live.py)."""
    import os

    from holdpoint.aws.frames import LIVE_ENV
    from holdpoint.aws.store import Store

    store = Store()
    if os.environ.get(LIVE_ENV):
        store.committed = lambda state: get_live().publish(state)
    return store


@cache
def get_live() -> Live:
    """Live events: the WebSocket connections on the table, posted through the management API, in
    the log's own format or AG-UI's (`format: "ag-ui"`, the AG-UI bridge's translation)."""
    from holdpoint.aws.connections import Connections
    from holdpoint.aws.frames import ManagementFrames
    from holdpoint.bridges.agui import live_frames
    from holdpoint.services.live import Live

    return Live(get_store(), Connections(), ManagementFrames(), formats={"ag-ui": live_frames})


@cache
def get_leases() -> WaitLeases:
    from holdpoint.aws.leases import WaitLeases

    return WaitLeases()


@cache
def get_queue() -> WorkQueue:
    from holdpoint.aws.queue import WorkQueue

    return WorkQueue()


@cache
def get_parking() -> Parking:
    from holdpoint.aws.parking import Parking

    return Parking()


@cache
def get_traces() -> XRayTraces:
    from holdpoint.aws.traces import XRayTraces

    return XRayTraces()


@cache
def get_timers() -> Timers:
    from holdpoint.aws.timers import Timers

    return Timers()


@cache
def get_slack() -> SlackChannel:
    """The Slack notify channel, its buttons sealed under the deployment's key."""
    from holdpoint.notify import channels

    return channels.slack(get_store())


def new_runner(store: Store | None = None, parking: Parking | None = None, queue: WorkQueue | None = None,
               timers: Timers | None = None, **options: Any) -> Runner:
    """An engine on DynamoDB, Step Functions and SQS, with the worker transports and LLM providers
    (the given adapters, or the container's); with a WebSocket API (`HOLDPOINT_LIVE_ENDPOINT`) its
    LLM calls stream to the session's followers."""
    import os

    from holdpoint import llm
    from holdpoint.aws.frames import LIVE_ENV
    from holdpoint.outbound import workers
    from holdpoint.services.runner import Runner

    if os.environ.get(LIVE_ENV):
        options = {"live": get_live(), "llm_stream": llm.stream, **options}
    if os.environ.get("RECEIPT_KEY_ID"):  # the template's ReceiptKey: each closed interrupt gets a receipt
        options = {"receipts": get_receipt_keys(), **options}
    return Runner(store or get_store(), parking or get_parking(), queue or get_queue(), timers or get_timers(),
                  worker=workers.decide, llm=llm.complete, **options)


@cache
def get_runner() -> Runner:
    """The container's engine."""
    return new_runner()


@cache
def get_notifier() -> Notifier:
    """The container's notifier: the event bus, the delivery log, the installed notify channels,
    links minted for this deployment's API (`HOLDPOINT_LINK_BASE_URL`)."""
    import os

    from holdpoint.aws import signing
    from holdpoint.aws.deliveries import DeliveryLog
    from holdpoint.aws.events import EventBus
    from holdpoint.bridges.a2a import PUSH_CHANNEL, Pushes
    from holdpoint.bridges.runs import RunDeliveries, chained, delivery_channels
    from holdpoint.notify import channels
    from holdpoint.notify.service import Notifier

    deliveries = DeliveryLog()
    pushes = Pushes(get_store(), get_push_configs())
    installed = {**channels.installed(get_store(), deliveries), PUSH_CHANNEL: channels.a2a_push(pushes.resolve),
                 **delivery_channels()}
    return Notifier(get_store(), EventBus(), deliveries, get_timers(), signing, installed,
                    link_base=os.environ.get("HOLDPOINT_LINK_BASE_URL", ""),
                    pushes=chained(pushes.starts, RunDeliveries(get_store()).starts))


@cache
def get_push_configs() -> PushConfigLog:
    """A2A push notification configs (PROTOCOL.md §8)."""
    from holdpoint.aws.pushconfigs import PushConfigLog

    return PushConfigLog()


@cache
def get_receipt_keys() -> KmsReceiptKeys:
    """The approval receipts' keys in KMS, their public halves read once per container."""
    from holdpoint.aws.receipts import KmsReceiptKeys

    return KmsReceiptKeys()


def reset() -> None:
    """Forget every built object (tests that swap the environment between cases)."""
    for factory in (get_store, get_live, get_leases, get_queue, get_parking, get_timers, get_runner, get_notifier,
                    get_slack, get_push_configs, get_traces, get_receipt_keys):
        factory.cache_clear()
