"""API Lambda: every route but the resume (API Gateway sends that one to the resume function)."""

from holdpoint.http.api import build
from holdpoint.http.resolver import handler_for

app = build()
handler = handler_for(app)
