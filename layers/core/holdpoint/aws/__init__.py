"""AWS adapters behind the ports: the DynamoDB store (`store`), the SQS work queue (`queue`),
Step Functions parking and timers (`parking`, `timers`) and Secrets Manager (`signing`). Every
boto3 client of the package is built by `clients` (an import contract keeps boto3 imported there)."""
