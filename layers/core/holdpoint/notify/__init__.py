"""Notifications (docs/NOTIFICATIONS.md), in a folder of their own as a bridge is: the notifier
(`service`: interrupt lifecycle events from the table's stream, published on the event bus and
delivered to each `notify` entry, claimed once, retried on a durable timer, dead-lettered), the
channels that deliver them (`channels`, each installed by the kind of entry it serves: `webhooks`,
`slack` with `slack_blocks`, its rendering, and `slack_config`, its declaration; `mail` with
`mail_render` and `mail_config`), and Slack's clicks coming back as resumes (`routes`, the
channels function's edge).

What every channel is given is the core's (`core/notify.py`: the lifecycle events, the one
notification body, what an agent declares), as an agent's config and the bridges read it too;
the one-click links a notification carries are the generic services' (`services/links.py`, their
own function's edge `http/links_api.py`), since following one is a resume on no channel.

Outside this package: `service`, `channels` and `routes` (an import contract keeps the rest
inside)."""
