"""Links Lambda: one-click signed links (GET shows the confirmation page, POST resumes); no
authorizer, the token is the credential."""

from holdpoint.coldstart import loading

with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from holdpoint.http.links_api import build, handler_for

    app = build()
    handler = handler_for(app)
