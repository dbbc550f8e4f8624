"""Channels Lambda: a click on a Slack button, verified by Slack's signature, becomes a resume."""

from holdpoint.coldstart import loading

with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from holdpoint.http.channels_api import build
    from holdpoint.http.resolver import handler_for

    app = build()
    handler = handler_for(app, json_body=False, hop="channels")
