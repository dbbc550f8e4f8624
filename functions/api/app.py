"""API Lambda: every route but the resume (API Gateway sends that one to the resume function)."""

from holdpoint.coldstart import loading

with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from holdpoint.http.api import build
    from holdpoint.http.resolver import handler_for

    app = build()
    handler = handler_for(app)
