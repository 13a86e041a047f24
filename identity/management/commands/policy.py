"""``manage.py policy list | show RULE | grant RULE [--user U | --group G] [--project P] | revoke ...
| override RULE (CHECK | --reset) | check RULE --user U --project P [--target-project T]``

A thin wrapper over ``cloudcore.core.policy``: a grant widens a rule for a user or group, globally
or for one project; ``--project`` alone grants it to every member of that project. An override
replaces the rule's default check in the policy file, so it can take a right away
(``override os_compute_api:servers:create admin``) as well as give one.
"""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from cloudcore.core import policy
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NotFound
from identity.services import policy_admin
from identity.services.roles import roles_for
from identity.services.tokens import is_admin_project


class Command(BaseCommand):
    help = "List, show, grant and revoke policy rules (Nova's names, guardian-backed grants)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="every rule with its default")
        listing.add_argument("--prefix", default="", help="only rules starting with this")
        show = sub.add_parser("show", help="one rule: default, description, operations, grants")
        show.add_argument("rule")
        for name in ("grant", "revoke"):
            p = sub.add_parser(name, help=f"{name} a rule")
            p.add_argument("rule")
            who = p.add_mutually_exclusive_group()
            who.add_argument("--user", help="user name or id")
            who.add_argument("--group", help="group name")
            p.add_argument("--project", help="project name or id (alone: every member of the project)")
            p.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
        override = sub.add_parser("override", help="replace a rule's default check (narrow or widen it)")
        override.add_argument("rule")
        override.add_argument("check", nargs="?", help=f"one of: {', '.join(sorted(policy.CHECKS))}")
        override.add_argument("--reset", action="store_true", help="back to the rule's default")
        override.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
        check = sub.add_parser("check", help="would the rule pass for a user scoped to a project?")
        check.add_argument("rule")
        check.add_argument("--user", required=True, help="user name or id")
        check.add_argument("--project", required=True, help="the project the user's token is scoped to")
        check.add_argument("--target-project", help="project owning the resource (default: --project)")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            if action == "list":
                self._list(options["prefix"])
            elif action == "show":
                self._show(self._rule(options["rule"]))
            elif action == "check":
                self._check(self._rule(options["rule"]), options)
            elif action == "override":
                self._override(self._rule(options["rule"]), options)
            else:
                self._change(action, self._rule(options["rule"]), options)
        except NotFound as exc:
            raise CommandError(str(exc)) from None

    def _rule(self, name: str) -> policy.Rule:
        try:
            return policy.get_rule(name)
        except policy.UnknownRule:
            raise CommandError(f"Unknown policy rule: {name}") from None

    def _list(self, prefix: str) -> None:
        for rule in policy.rules():
            if rule.name.startswith(prefix):
                grants = len(policy.grants_of(rule.name))
                extra = f"  [{grants} grant{'s' if grants != 1 else ''}]" if grants else ""
                check = rule.effective_check
                if check != rule.check:
                    extra = f"  (overridden; default {rule.check}){extra}"
                self.stdout.write(f"{rule.name:<60} {check}{extra}")

    def _show(self, rule: policy.Rule) -> None:
        self.stdout.write(f"rule:        {rule.name}")
        self.stdout.write(f"default:     {rule.check}")
        if rule.effective_check != rule.check:
            self.stdout.write(f"override:    {rule.effective_check} (in {policy.policy_file()})")
        self.stdout.write(f"description: {rule.description}")
        for method, path in rule.operations:
            self.stdout.write(f"operation:   {method} {path}")
        grants = policy.grants_of(rule.name)
        if not grants:
            self.stdout.write("grants:      none")
        for grant in grants:
            self.stdout.write(f"grant:       {policy_admin.describe_grant(grant)}")

    def _change(self, action: str, rule: policy.Rule, options: dict[str, Any]) -> None:
        user = policy_admin.find_user(options["user"]) if options.get("user") else None
        group = policy_admin.find_group(options["group"]) if options.get("group") else None
        project = policy_admin.find_project(options["project"]) if options.get("project") else None
        if user is None and group is None and project is None:
            raise CommandError(f"{action} needs --user, --group or --project")
        holder = (f"user {user.name}" if user else f"group {group.name}" if group
                  else f"every member of project {project.name}")  # type: ignore[union-attr]
        scope = f" on project {project.name}" if project and (user or group) else ""
        verb = "granted to" if action == "grant" else "revoked from"
        if options.get("dry_run"):
            self.stdout.write(f"(dry run) {rule.name} would be {verb} {holder}{scope}")
            return
        fn = policy.grant if action == "grant" else policy.revoke
        fn(rule.name, user=user, group=group, project=project)
        self.stdout.write(f"{rule.name} {verb} {holder}{scope}")

    def _override(self, rule: policy.Rule, options: dict[str, Any]) -> None:
        check = None if options["reset"] else options.get("check")
        if check is None and not options["reset"]:
            raise CommandError("override needs a check or --reset")
        if check is not None and policy.CHECK_ALIASES.get(check, check) not in policy.CHECKS:
            raise CommandError(f"Unknown check {check!r}; one of: {', '.join(sorted(policy.CHECKS))}")
        said = f"{rule.name} back to its default {rule.check}" if check is None else f"{rule.name} now checks {check}"
        if options.get("dry_run"):
            self.stdout.write(f"(dry run) {said}")
            return
        policy.override_set(rule.name, check)
        self.stdout.write(f"{said} (in {policy.policy_file()})")

    def _check(self, rule: policy.Rule, options: dict[str, Any]) -> None:
        user = policy_admin.find_user(options["user"])
        project = policy_admin.find_project(options["project"])
        target = policy_admin.find_project(options["target_project"]) if options.get("target_project") else project
        roles = roles_for(user=user, project=project)
        actor = RequestContext(user_id=user.id, project_id=project.id, roles=roles,
                               is_admin="admin" in roles and is_admin_project(project))
        resource = {"project_id": target.id, "user_id": user.id}
        by_check = rule.check_allows(actor, resource)
        by_grant = policy.granted(actor, rule.name, resource)
        overridden = rule.effective_check != rule.check
        verdict = "allowed" if by_check or by_grant else "denied"
        reason = ("by its override" if overridden else "by its default") if by_check else \
            "by a grant" if by_grant else f"({'override' if overridden else 'default'} {rule.effective_check})"
        self.stdout.write(f"{rule.name}: {verdict} {reason} for user {user.name} with roles "
                          f"{roles or 'none'} on project {project.name}, resource of project {target.name}")
