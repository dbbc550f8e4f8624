"""The API's routes, one Router per resource, each declared once: the API function includes them
all (and serves the OpenAPI document made from them); the resume function includes only its own."""
