"""Holdpoint's approvals for agents and workflows it does not run, each through the framework's
own pause: the run asks, its process ends, a person answers on any Holdpoint channel, and the
answer resumes it (PROTOCOL.md §10). One module per framework, each needing its extra
(`pip install "holdpoint-sdk[strands]"`); none is imported here.

Each integration mirrors the framework's interrupts into one Holdpoint run, keeps in the run's
state (held by Holdpoint, handed back with the answers) what resuming needs, and turns a delivery
into the framework's resume. An answer approves only when its verdict is `approved`: a denial, a
dismissal, an expiry that denies, or an answer that says neither, refuses the call.
"""
