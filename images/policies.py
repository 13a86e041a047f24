"""Glance's policy rules for what the images app checks (names and defaults as Glance's), registered
in the one registry (``cloudcore.core.policy``)."""
from cloudcore.core.policy import register

TASKS_API_ACCESS = "tasks_api_access"

register(TASKS_API_ACCESS, "admin",
         "Use the tasks API (create, list and show tasks). A task's import makes the cloud read the URL "
         "it names: cloud admins only by default, as in Glance.",
         [("POST", "/v2/tasks"), ("GET", "/v2/tasks"), ("GET", "/v2/tasks/{task_id}")])
