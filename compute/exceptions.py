"""Errors of a build on its compute host (their class names are the faults' ``exception``)."""
from __future__ import annotations

from cloudcore.core.exceptions import CloudcoreError, NoValidHost


class BuildAbortException(CloudcoreError):
    message = "Build of instance %(instance_uuid)s aborted: %(reason)s"


class MaxRetriesExceeded(NoValidHost):
    message = ("Exceeded maximum number of retries. Exhausted all hosts available for retrying build "
               "failures for instance %(instance_uuid)s.")

