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
