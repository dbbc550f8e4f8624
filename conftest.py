"""Root conftest: registers the local-stack fixtures (moto_server, stack_name, local_stack,
local_stack_factory, aws_env) and the over-HTTP fixtures of tests/stack.py for every test directory."""

pytest_plugins = ["holdpoint_local.pytest_plugin", "tests.stack"]
