"""AWS adapters behind the ports: the DynamoDB store (`store`), the SQS work queue (`queue`),
Step Functions parking and timers (`parking`, `timers`) and Secrets Manager (`signing`). Only
this package and the entry points build boto3 clients for Holdpoint's own resources."""
