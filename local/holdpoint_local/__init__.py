"""Holdpoint's embedded local stack: moto as "AWS", resources from template.yaml, API Gateway-shaped
front end and SQS pollers that call the real handlers, so everything runs on one machine."""

FAKE_ENV: dict[str, str] = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}
"""Fake credentials and region: moto accepts any, and they keep boto3 from looking for real ones."""

REGION = "us-east-1"
ACCOUNT_ID = "123456789012"  # moto's default account
# How often the emulators' HTTP servers look for a stop (socketserver's default is 0.5 s, which a
# test run of hundreds of stacks paid at every stack's stop).
SHUTDOWN_POLL_SECONDS = 0.05

LAMBDA_ENV: dict[str, str] = {
    **FAKE_ENV,
    "TABLE_NAME": "holdpoint", "WORK_QUEUE_URL": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT_ID}/w.fifo",
    "PARK_STATE_MACHINE_ARN": f"arn:aws:states:{REGION}:{ACCOUNT_ID}:stateMachine:park",
    "TIMER_SCHEDULE_GROUP": "holdpoint-timers", "TIMER_TARGET_ARN": f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:w.fifo",
    "TIMER_ROLE_ARN": f"arn:aws:iam::{ACCOUNT_ID}:role/timers",
    "PAYLOAD_BUCKET": "holdpoint-payloads", "HOLDPOINT_ACCOUNT_ID": ACCOUNT_ID,
    "JWT_SECRET_ARN": f"arn:aws:secretsmanager:{REGION}:{ACCOUNT_ID}:secret:jwt",
    "WORKER_LAMBDA_ALLOWLIST": "", "HOLDPOINT_SECRET_ENV_ALLOWLIST": "", "HOLDPOINT_TENANT_SECRET_PREFIX": "holdpoint/",
    "POWERTOOLS_SERVICE_NAME": "holdpoint", "POWERTOOLS_LOG_LEVEL": "INFO",
}
"""The environment a handler has on Lambda (dummy resource names), for loading a handler outside
the local stack: the cold-start bench and the import deny-list test."""
