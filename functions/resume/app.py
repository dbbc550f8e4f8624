"""Resume Lambda: one consistent read checks the interrupt (A1), one conditional write flips it,
then one SendTaskSuccess (R7)."""

from holdpoint.coldstart import loading

with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from holdpoint.http.resolver import handler_for
    from holdpoint.http.resume_api import build

    app = build()
    handler = handler_for(app, hop="resume")
