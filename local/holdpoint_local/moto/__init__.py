"""moto as "AWS" for the local stack: the moto server child (server.py) and the fixes to moto 5.2.5
it runs with, one module per patched service, applied inside the moto server (and the unit tests'
in-process moto) so the emulator keeps the guarantees the real service gives.

- dynamodb.py, fixes 1-6 and 8: atomic conditional writes, rollback by item, no item kept
  forever, a Query reads its partition, a cancelled transaction leaves nothing in the stream, a
  bounded stream tail, items answered as they are stored;
- sqs.py, fix 7: a FIFO message group is in flight with one receiver at a time;
- cloudformation.py, fixes 9-15, 22, 31 and 32: what moto's CloudFormation created wrongly or not at all
  from the translated template.yaml;
- iam.py, fixes 16-21, 23-24, 26 and 33: IAM checked against the resource a call names, a service's
  trust, a CloudFormation role's policies, a state machine's role, a bodiless GET's signature, the
  management API's routing and authorisation, an X-Ray call as its API action;
- xray.py, fix 25: GetTraceSummaries filters on annotations and lists them;
- stepfunctions.py, fixes 27-28: a task token takes one answer, a failure keeps its cause; and,
  not a fix, a local-only cap on open Step Functions executions (`CAP_KEY`);
- awslambda.py, fixes 29-30: a durable function's callbacks, answered by AWS's durable execution
  emulator when one is set; an invoke run by `sam local start-lambda` when one is set;
- motoapi.py, fix 34: `/moto-api/data.json` answers (what SES sent, for the tests) once a Lambda exists;
- ses.py, fix 35: an SES v2 message keeps its text part beside its HTML part.
- cognito.py, fix 36: a user pool's hosted UI, the OAuth 2.0 authorization code flow with PKCE.

They are checked by tests/integration/test_moto_fixes.py and test_moto_iam.py, and
tests/e2e/test_moto_server.py proves the moto server child process runs with them. They patch moto
internals, so `apply` refuses any moto but the pinned one (`PINNED`): a new moto must be read
against each fix before the pin moves.
"""

from __future__ import annotations

PINNED = "5.2.5"
MARKER = "holdpoint moto fixes applied"


class UnknownMotoVersion(RuntimeError):
    """The fixes were written against another moto's internals."""


def applied() -> bool:
    from . import dynamodb

    return dynamodb.applied()


def apply() -> None:
    """Install every fix; calling it again changes nothing. Refuses an unknown moto version.
    (moto is imported here, not at the top, so the stack's own process, which only starts the
    server child, does not load moto's models.)"""
    import moto

    if moto.__version__ != PINNED:
        raise UnknownMotoVersion(
            f"holdpoint_local.moto patches moto {PINNED} internals, but moto {moto.__version__} is installed: "
            f"pin moto=={PINNED} in requirements-dev.txt, or re-read each fix against the new moto and move PINNED")
    if applied():
        return
    from . import awslambda, cloudformation, cognito, dynamodb, iam, motoapi, ses, sqs, stepfunctions, xray

    dynamodb.apply()  # fixes 1-6, 8
    sqs.apply()  # fix 7
    cloudformation.apply()  # fixes 9-15, 22, 31, 32
    stepfunctions.apply()  # fixes 27-28, the open-execution cap
    xray.apply()  # fix 25
    awslambda.apply()  # fixes 29-30
    motoapi.apply()  # fix 34
    ses.apply()  # fix 35
    cognito.apply()  # fix 36
    iam.apply()  # fixes 16-21, 23-24, 26, 33: IAM checked against the resource a call names
