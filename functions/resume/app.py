"""Resume Lambda: one consistent read checks the interrupt (A1), one conditional write flips it,
then one SendTaskSuccess (R7)."""

from holdpoint.http.resolver import handler_for
from holdpoint.http.resume_api import build

app = build()
handler = handler_for(app)
