"""``manage.py scheduler explain SERVER [--now] [--request-id R] [--json]``: why the server (its
uuid, or a name one server has) was
scheduled where it was, or not at all (its stored trace); ``--now`` adds the dry run of its own
request spec (would it fit now?).

``manage.py scheduler explain --flavor F [--image I] [--az Z] [--hint k=v ...] [--json]``: the
dry run of booting one server: whether it fits now and where, and if not what to change
(``--hint group=UUID``: the group's policy as a boot would honour it, naming the members that keep
it from a host). Nothing is allocated. Exit code 0, 1 when the server, flavor, image or group is
not found (or the group is full)."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, Invalid, NotFound
from scheduling.services.explanations import (
    SchedulingTraceNotFound,
    request_dry_run,
    server_dry_run,
    server_explanation,
    server_ref,
)
from scheduling.trace import trace_text


class Command(BaseCommand):
    help = "Explain scheduling decisions (explain)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        explain = sub.add_parser("explain", help="Explain a server's scheduling, or dry-run a request.")
        explain.add_argument("server", nargs="?", help="server uuid or name (its stored trace)")
        explain.add_argument("--request-id", help="the trace of this request (default: the latest)")
        explain.add_argument("--now", action="store_true", help="also dry-run the server's request spec now")
        explain.add_argument("--flavor", help="dry run: flavor id or name")
        explain.add_argument("--image", help="dry run: image id or name")
        explain.add_argument("--az", help="dry run: availability zone")
        explain.add_argument("--hint", action="append", default=[], metavar="KEY=VALUE",
                             help="dry run: scheduler hint (repeatable)")
        explain.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        if bool(options["server"]) == bool(options["flavor"]):
            raise CommandError("give either SERVER or --flavor")
        try:
            if options["server"]:
                self._server(options)
            else:
                hints = dict(_hint(h) for h in options["hint"])
                answer = request_dry_run(actor=RequestContext.system(), flavor_ref=options["flavor"],
                                         image_ref=options["image"], availability_zone=options["az"], hints=hints)
                self._dry_run(answer, options["json"])
        except (NotFound, Invalid, Forbidden, Conflict) as exc:
            raise CommandError(str(exc)) from exc

    def _server(self, options: dict[str, Any]) -> None:
        # the trace kept under the id given, else the server of that name's
        server = options["server"]
        try:
            found = server_explanation(instance_uuid=server, request_id=options["request_id"])
        except SchedulingTraceNotFound:
            named = server_ref(server)  # a uuid is itself; a name no server has: NotFound
            if named == server:
                raise
            server = named
            found = server_explanation(instance_uuid=server, request_id=options["request_id"])
        if options["json"]:
            self.stdout.write(json.dumps({k: v for k, v in found.items() if k != "text"}, indent=2, sort_keys=True))
        else:
            self.stdout.write(f"server {found['server_id']} request {found['request_id']} at {found['created_at']}: "
                              f"{found['result']}")
            self.stdout.write(found["text"])
        if options["now"]:
            self._dry_run(server_dry_run(instance_uuid=server), options["json"])

    def _dry_run(self, answer: dict[str, Any], as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(answer, indent=2, sort_keys=True))
            return
        if answer["fits"]:
            self.stdout.write(f"fits now on: {', '.join(answer['hosts'])}")
        else:
            self.stdout.write(f"does not fit now: {answer['message']}")
        for suggestion in answer["suggestions"]:
            self.stdout.write(f"  {suggestion['host']} (cell {suggestion['cell']}): {'; '.join(suggestion['changes'])}")
            for member in suggestion["group_members"]:
                self.stdout.write(f"    group member {member['id']} ({member['name'] or '-'}) on {member['host']}")
            for server in suggestion["free_servers"]:
                sizes = ", ".join(f"{rc}={n}" for rc, n in sorted(server["resources"].items()))
                self.stdout.write(f"    free server {server['id']} ({server['name'] or '-'}): {sizes}")
        if answer["disabled_hosts_that_fit"]:
            self.stdout.write(f"disabled hosts that would fit: {', '.join(answer['disabled_hosts_that_fit'])}")
        self.stdout.write("trace:")
        self.stdout.write(trace_text(answer["trace"]))


def _hint(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise CommandError(f"--hint takes KEY=VALUE, not {text!r}")
    return key, value
