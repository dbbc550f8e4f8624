"""The local stack's look-alikes of the AWS services moto does not run: API Gateway's HTTP API
(frontend) and WebSocket API (wsgateway), Lambda's event source mappings (pollers for SQS, streams
for DynamoDB Streams), EventBridge Scheduler's firing (scheduler), and Lambda itself: a function
runs in this process (runtime, with its role's credentials from credentials) or in a `sam local`
container (samlocal). Each calls the real handlers with the events AWS would send them."""
