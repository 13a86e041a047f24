"""The scheduler's copy of placement: every provider's inventories, usage, traits and
aggregates in memory, so that allocation candidates cost no query per provider.

Freshness. Every placement write bumps ``PlacementChangeStamp.seq`` in its own transaction and
stamps the providers it changed with the new value (``ResourceProvider.changed_seq``; see
``services._stamp_change``). Before answering, the cache reads the stamp with the number of
providers and the highest provider id (one statement); when ``seq`` moved it reloads only the
providers stamped after the value it last saw (five statements, whatever the number of
providers), unless every change since was a claim for a new consumer this process committed
(``services.committed_claims``: what it added to usage is known, nothing is read); a deleted
or re-parented provider (``full_seq``), a stamp row it does not know (``epoch``: a database
restored or rolled back), or a provider count that does not add up (rows written behind
placement's back) reloads everything. The claim itself is still checked by
``allocations_put`` against the database, so a candidate is never more than a proposal.

Candidates are computed exactly as ``services.allocation_candidates`` computes them in SQL (same
fit rule, traits, ``member_of``, order by provider id, ``limit``, ``randomize``) for the
arguments the scheduler uses; ``tests/functional/scheduling/test_provider_cache.py`` compares
both on the same data.
"""
from __future__ import annotations

import gc
import heapq
import random
import threading
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import compress
from typing import Any, NamedTuple

from django.db.models import Sum

from cells.transactions import connection_for
from cloudcore.core.serverprepared import server_prepared

from ..models import Allocation, Inventory, PlacementChangeStamp, ResourceProvider
from . import services
from .services import AllocationCandidates, PlacementInvalid, capacity

#: a delta larger than this reloads everything (one scan is cheaper than huge IN lists)
MAX_DELTA = 2000
#: how many shortfall answers are kept (``ProviderCache.shortfall``)
SHORTFALLS_KEPT = 8
#: how many more ranks than the nearest asked for a kept shortfall holds, so that some of its
#: nearest can change without a walk of every provider
NEAREST_SLACK = 32
#: how many loads of the copy are remembered with the providers they replaced (``_changes``),
#: and up to how many changed providers a kept shortfall is updated instead of computed again
CHANGES_KEPT = 64
INCREMENTAL_MAX = 256
#: copies at least this big are frozen out of the garbage collector (``keep_out_of_collections``)
FREEZE_AT = 1000


@dataclass(slots=True)
class _Inventory:
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    #: ``(total - reserved) * allocation_ratio``: what the fit rule compares with
    limit: float = field(init=False)
    #: ``services.capacity``: what can be allocated, as providers' summaries say
    capacity: int = field(init=False)

    def __post_init__(self) -> None:
        self.limit = (self.total - self.reserved) * self.allocation_ratio
        self.capacity = capacity(self.total, self.reserved, self.allocation_ratio)

    def can_take(self, amount: int, used: int) -> bool:
        """Placement's rule (``services._can_take``): constraints, then
        ``(total - reserved) * allocation_ratio >= used + amount``."""
        return (self.min_unit <= amount <= self.max_unit
                and (self.step_size == 1 or amount % self.step_size == 0)
                and self.limit >= used + amount)

    def free_and_fits(self, amount: int, used: int) -> tuple[int, bool]:
        """(what is free, never less than 0; whether ``amount`` fits: ``can_take``), as a
        shortfall counts one provider (``_Shortfall.walk`` inlines the same)."""
        return max(self.capacity - used, 0), self.can_take(amount, used)


@dataclass(slots=True)
class _Provider:
    id: int
    uuid: str
    parent_uuid: str | None
    root_uuid: str | None
    inventories: dict[str, _Inventory] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    traits: set[str] = field(default_factory=set)
    aggregates: set[str] = field(default_factory=set)
    #: ``summary()`` as first built: a provider is replaced, never changed, when it is reloaded
    _summary: dict[str, Any] | None = None

    def can_take(self, checks: list[tuple[str, int]]) -> bool:
        """Does every ``(resource class, amount)`` of ``checks`` fit (``_Inventory.can_take``)?"""
        inventories, used = self.inventories, self.used
        for rc, n in checks:
            inv = inventories.get(rc)
            if inv is None or not inv.can_take(n, used.get(rc, 0)):
                return False
        return True

    def summary(self) -> dict[str, Any]:
        """The provider's summary as allocation candidates give it, built once per load and
        shared by every answer until the provider is reloaded: read it, do not change it."""
        if self._summary is None:
            inventories, used = self.inventories, self.used
            self._summary = {
                "resources": {rc: {"capacity": inv.capacity, "used": used.get(rc, 0)}
                              for rc, inv in inventories.items()},
                "traits": sorted(self.traits), "parent_provider_uuid": self.parent_uuid,
                "root_provider_uuid": self.root_uuid or self.uuid,
            }
        return self._summary


class _Question(NamedTuple):
    """A ``shortfall`` question: the request's checks ``(resource class, amount)``, traits and
    ``member_of`` groups, the providers in scope (None: all) and how many nearest to describe."""

    checks: tuple[tuple[str, int], ...]
    required: frozenset[str]
    forbidden: frozenset[str]
    groups: tuple[frozenset[str], ...]
    only: frozenset[str] | None
    nearest: int


def _lacks(rp: _Provider, q: _Question) -> dict[str, Any]:
    """What ``rp`` lacks to take the request (one of ``shortfall``'s nearest)."""
    short: dict[str, int] = {}
    for rc, n in q.checks:
        inv, used = rp.inventories.get(rc), rp.used.get(rc, 0)
        if inv is None or not inv.can_take(n, used):
            free = max(inv.capacity - used, 0) if inv else 0
            short[rc] = max(n - free, 0) or n  # 0 short but refused: a unit constraint
    return {"uuid": rp.uuid, "short": short, "missing_traits": sorted(q.required - rp.traits),
            "forbidden_traits": sorted(q.forbidden & rp.traits),
            "outside_aggregates": bool(q.groups) and not all(group & rp.aggregates for group in q.groups)}


def _bump(counts: dict[Any, int], key: Any, by: int) -> None:
    left = counts.get(key, 0) + by
    if left:
        counts[key] = left
    else:
        del counts[key]


def _count_free(counts: dict[int, int], most: list[int], index: int, free: int, by: int) -> None:
    """One provider's ``free`` amount put in (``by`` 1) or taken out (-1) of ``counts`` (how many
    providers have each free amount of the check at ``index``), ``most[index]`` kept the highest."""
    left = counts.get(free, 0) + by
    if left:
        counts[free] = left
    else:
        del counts[free]
        if free == most[index]:
            most[index] = max(counts, default=0)
            return
    if free > most[index]:
        most[index] = free


@dataclass(slots=True)
class _Shortfall:
    """The answer to one ``shortfall`` question for the copy at ``generation``, kept as counts
    that one provider's part can be taken out of and put back in: how many providers are in
    scope, short per check, lack each required trait, have each forbidden one, are outside the
    aggregates, are eligible (no trait or aggregate problem); per check how many providers
    (eligible / any) have each free amount, and the most; and the best ranks, worst first, at
    most ``nearest + NEAREST_SLACK`` of the ``ranked`` providers, every other ranked provider
    ranking below all of them."""

    question: _Question
    generation: int
    total: int
    short_on: list[int]
    missing: dict[str, int]
    present: dict[str, int]
    outside: int
    eligible: int
    free_eligible: list[dict[int, int]]
    free_any: list[dict[int, int]]
    most_free_eligible: list[int]
    most_free_any: list[int]
    ranked: int
    best: list[tuple[int, float, int]]
    _answer: dict[str, Any] | None = None
    #: the answer given before the last ``update``: given again, the same object, when the new
    #: one equals it (a claim elsewhere in the cloud rarely changes why a request fits nowhere)
    _given: dict[str, Any] | None = None
    #: what each of the last answer's nearest lacks, by provider id, with the provider it was told
    #: of (a provider is replaced, never changed, when reloaded: the same one lacks the same)
    _lacking: dict[int, tuple[_Provider, dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def walk(cls, q: _Question, providers: list[_Provider], generation: int) -> _Shortfall:
        """The answer from every provider of ``providers`` in scope (placement's fit rule, as
        ``_Inventory.can_take``, inlined): one plain loop that counts as it goes, the free
        amounts counted at the end. A provider's rank orders the nearest: fewer problems first,
        then the smaller shortage relative to the amounts requested, then the lower id."""
        checks, required, forbidden, groups, only, nearest = q
        short_on = [0] * len(checks)
        frees_any: list[list[int]] = [[] for _ in checks]
        excluded: list[int] = []  # positions in ``frees_any`` of the providers not eligible
        missing: dict[str, int] = {}
        present: dict[str, int] = {}
        outside = total = 0
        #: the best ``keep`` ranks so far: a min-heap, its first item the worst kept
        best: list[tuple[int, float, int]] = []
        keep = nearest + NEAREST_SLACK if nearest > 0 else 0
        ranked = 0
        indexed = tuple((index, rc, n) for index, (rc, n) in enumerate(checks))
        for rp in providers:
            if only is not None and rp.uuid not in only:
                continue
            total += 1
            problems = 0
            traits = rp.traits
            if required and not required <= traits:
                for trait in required - traits:
                    missing[trait] = missing.get(trait, 0) + 1
                    problems += 1
            if forbidden and not forbidden.isdisjoint(traits):
                for trait in forbidden & traits:
                    present[trait] = present.get(trait, 0) + 1
                    problems += 1
            if groups and not all(not group.isdisjoint(rp.aggregates) for group in groups):
                outside += 1
                problems += 1
            eligible = not problems
            if not eligible:
                excluded.append(total - 1)
            relative = 0.0
            inventories, usage = rp.inventories, rp.used
            for index, rc, n in indexed:
                inv = inventories.get(rc)
                if inv is None:
                    free, fits = 0, False
                else:
                    used = usage.get(rc, 0)
                    free = inv.capacity - used
                    if free < 0:
                        free = 0
                    fits = (inv.min_unit <= n <= inv.max_unit and (inv.step_size == 1 or n % inv.step_size == 0)
                            and inv.limit >= used + n)
                frees_any[index].append(free)
                if not fits:
                    short_on[index] += 1
                    problems += 1
                    relative += (n - free if free < n else n) / n
            if not problems or not keep:
                continue
            ranked += 1
            rank = (-problems, -relative, -rp.id)
            if len(best) < keep:
                heapq.heappush(best, rank)
            elif rank > best[0]:
                heapq.heapreplace(best, rank)
        free_any = [dict(Counter(column)) for column in frees_any]
        if excluded:
            mask = [True] * total
            for position in excluded:
                mask[position] = False
            free_eligible = [dict(Counter(compress(column, mask))) for column in frees_any]
        else:
            free_eligible = [dict(c) for c in free_any]
        return cls(
            question=q, generation=generation, total=total, short_on=short_on, missing=missing, present=present,
            outside=outside, eligible=total - len(excluded), free_eligible=free_eligible, free_any=free_any,
            most_free_eligible=[max(c, default=0) for c in free_eligible],
            most_free_any=[max(c, default=0) for c in free_any],
            ranked=ranked, best=sorted(best),
        )

    def update(self, changed: Mapping[int, _Provider | None], providers: Mapping[int, _Provider],
               generation: int) -> bool:
        """Take the ``changed`` providers out as the answer counted them (their versions given,
        None: not counted) and put them back in as ``providers`` has them now (``_count``);
        False when the nearest can no longer be told without a walk of every provider (more of
        the best left than were kept)."""
        q = self.question
        for pid, old in changed.items():
            if old is not None:
                self._count(old, -1)
            new = providers.get(pid)
            if new is not None:
                self._count(new, 1)
        if self._answer is not None:
            self._given = self._answer
        self.generation, self._answer = generation, None
        return q.nearest <= 0 or len(self.best) >= min(q.nearest, self.ranked)

    def _count(self, rp: _Provider, by: int) -> None:
        """Put ``rp`` in (``by`` 1) or take it out (-1) of the counts, exactly as ``walk`` counts
        a provider (the same checks in the same order, so that its rank is the same number);
        one provider's counts made in place, without the answer of a walk over it alone."""
        checks, required, forbidden, groups, only, nearest = self.question
        if only is not None and rp.uuid not in only:
            return
        self.total += by
        problems = 0
        traits = rp.traits
        if required and not required <= traits:
            for trait in required - traits:
                _bump(self.missing, trait, by)
                problems += 1
        if forbidden and not forbidden.isdisjoint(traits):
            for trait in forbidden & traits:
                _bump(self.present, trait, by)
                problems += 1
        if groups and not all(not group.isdisjoint(rp.aggregates) for group in groups):
            self.outside += by
            problems += 1
        eligible = not problems
        if eligible:
            self.eligible += by
        relative = 0.0
        inventories, usage = rp.inventories, rp.used
        for index, (rc, n) in enumerate(checks):
            inv = inventories.get(rc)
            free, fits = inv.free_and_fits(n, usage.get(rc, 0)) if inv is not None else (0, False)
            if not fits:
                self.short_on[index] += by
                problems += 1
                relative += (n - free if free < n else n) / n
            _count_free(self.free_any[index], self.most_free_any, index, free, by)
            if eligible:
                _count_free(self.free_eligible[index], self.most_free_eligible, index, free, by)
        if not problems or nearest <= 0:
            return
        rank = (-problems, -relative, -rp.id)
        best = self.best
        self.ranked += by
        if by < 0:
            at = bisect_left(best, rank)
            if at < len(best) and best[at] == rank:
                del best[at]
        elif self.ranked - 1 == len(best) or (best and rank > best[0]):
            # no ranked provider was left out, or it ranks above one that was kept
            insort(best, rank)
            if len(best) > nearest + NEAREST_SLACK:
                del best[0]

    def answer(self, providers: Mapping[int, _Provider]) -> dict[str, Any]:
        """The answer (``ProviderCache.shortfall``), built once per generation: read it, do not
        change it. What a nearest provider lacks is told again only when it was reloaded since
        the last answer (``_lacking``). An answer equal to the one given before the last
        ``update`` is that one, the same object: its readers that keep what they made of an answer
        by its identity (the scheduler's answer named by host, a trace body's JSON) find it again."""
        if self._answer is None:
            q = self.question
            most_free = self.most_free_eligible if self.eligible else self.most_free_any
            told, lacking = self._lacking, {}
            for rank in self.best[::-1][:q.nearest] if q.nearest > 0 else []:
                rp = providers[-rank[2]]
                seen = told.get(rp.id)
                lacking[rp.id] = seen if seen is not None and seen[0] is rp else (rp, _lacks(rp, q))
            self._lacking = lacking
            answer = {
                "providers": self.total,
                "resources": {rc: {"requested": n, "short_on": self.short_on[i], "most_free": most_free[i]}
                              for i, (rc, n) in enumerate(q.checks) if self.short_on[i]},
                "traits_missing": dict(self.missing), "traits_forbidden": dict(self.present),
                "outside_aggregates": self.outside,
                "nearest": [lacks for _rp, lacks in lacking.values()],
            }
            given = self._given
            self._answer = given if given is not None and given == answer else answer
        return self._answer


class ProviderCache:
    """One per process (``provider_cache``); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._providers: dict[int, _Provider] = {}
        self._order: list[int] = []
        self._stamp: tuple[str | None, int] | None = None  # (epoch, seq) the copy reflects
        #: resource classes seen in an inventory (so they exist: classes are never deleted)
        self._classes: set[str] = set()
        #: ``shortfall``'s answers by question, oldest first
        self._shortfalls: dict[tuple[Any, ...], _Shortfall] = {}
        #: how many times providers were (re)loaded, and for the last ``CHANGES_KEPT`` loads the
        #: providers each replaced ({provider id: the old one, None if new}; None: everything)
        self._generation = 0
        self._changes: dict[int, dict[int, _Provider | None] | None] = {}
        self.reloads = {"full": 0, "delta": 0}
        #: refreshes answered from this process's own claims (``_apply_own_claims``)
        self.claims_applied = 0

    def clear(self) -> None:
        with self._lock:
            self._providers, self._order, self._stamp, self._classes = {}, [], None, set()
            self._shortfalls, self._changes = {}, {}
            self._generation += 1

    # -- freshness ----------------------------------------------------------------------------
    def _read_stamp(self) -> tuple[str | None, int, int, int, int | None]:
        """(epoch, seq, full_seq, provider count, highest provider id) in one statement."""
        stamp, rp = PlacementChangeStamp._meta.db_table, ResourceProvider._meta.db_table
        with connection_for(ResourceProvider).cursor() as cursor:
            cursor.execute(server_prepared(
                f"SELECT s.epoch, s.seq, s.full_seq, (SELECT COUNT(*) FROM {rp}), (SELECT MAX(id) FROM {rp}) "  # noqa: S608 - table names from the models
                f"FROM (SELECT 1 AS one) AS o LEFT JOIN {stamp} AS s ON s.id = 1"))
            epoch, seq, full_seq, count, max_id = cursor.fetchone()
        return epoch, int(seq or 0), int(full_seq or 0), int(count), max_id

    def refresh(self) -> None:
        with self._lock:
            self._refresh()

    def _refresh(self) -> None:
        epoch, seq, full_seq, count, max_id = self._read_stamp()
        known = self._stamp
        if known is None or known[0] != epoch or seq < known[1] or full_seq > known[1]:
            self._load(None)
        elif seq > known[1] and not self._apply_own_claims(epoch, known[1], seq):
            self._load_changed_since(known[1])
        if len(self._providers) != count or (self._order[-1] if self._order else None) != max_id:
            self._load(None)
        self._stamp = (epoch, seq)

    def _apply_own_claims(self, epoch: str | None, after: int, seq: int) -> bool:
        """When every write since ``after`` up to ``seq`` was a claim this process committed for a
        new consumer (``services.committed_claims``), add what they allocated to the providers'
        usage instead of reading them again. False (nothing changed) otherwise. The providers
        replaced are logged as a load's are (``_changes``), so that a kept shortfall counts them
        again (``_Shortfall.update``) instead of answering as before the claims."""
        claims = services.committed_claims(epoch, after, seq) if epoch is not None else None
        if claims is None or any(pid not in self._providers for added in claims for pid in added):
            return False
        replaced: dict[int, _Provider | None] = {}
        for added in claims:
            for pid, amounts in added.items():
                rp = self._providers[pid]
                replaced.setdefault(pid, rp)
                used = dict(rp.used)
                for rc, amount in amounts.items():
                    used[rc] = used.get(rc, 0) + amount
                # replaced, not changed: answers already given share the old one's summary
                self._providers[pid] = _Provider(rp.id, rp.uuid, rp.parent_uuid, rp.root_uuid, rp.inventories,
                                                 used, rp.traits, rp.aggregates)
        self._logged(replaced)
        self.claims_applied += 1
        return True

    @staticmethod
    def _providers_query() -> Any:
        return ResourceProvider.objects.values_list("id", "uuid", "parent__uuid", "root__uuid")

    def _load_changed_since(self, seq: int) -> None:
        """Reload the providers stamped after ``seq`` (everything when there are too many)."""
        rows = list(self._providers_query().filter(changed_seq__gt=seq)[:MAX_DELTA + 1])
        if len(rows) > MAX_DELTA:
            self._load(None)
        elif rows:
            self._load([row[0] for row in rows], rows)

    def _load(self, ids: list[int] | None, provider_rows: list[tuple[Any, ...]] | None = None) -> None:
        """Reload ``ids`` (None: everything) from the database (``provider_rows``: their rows of
        ``_providers_query``, when already read)."""
        self.reloads["delta" if ids is not None else "full"] += 1

        def only(qs: Any, column: str) -> Any:
            return qs if ids is None else qs.filter(**{f"{column}__in": ids})

        if provider_rows is None:
            provider_rows = list(only(self._providers_query(), "id"))
        fresh = {pid: _Provider(pid, uuid, parent, root) for pid, uuid, parent, root in provider_rows}
        for pid, rc, *numbers in only(Inventory.objects.all(), "resource_provider_id").values_list(
                "resource_provider_id", "resource_class__name", "total", "reserved", "min_unit", "max_unit",
                "step_size", "allocation_ratio"):
            if pid in fresh:
                fresh[pid].inventories[rc] = _Inventory(*numbers)
        for pid, rc, used in only(Allocation.objects.all(), "resource_provider_id").values(
                "resource_provider_id", "resource_class__name").order_by().annotate(total=Sum("used")).values_list(
                "resource_provider_id", "resource_class__name", "total"):
            if pid in fresh:
                fresh[pid].used[rc] = int(used or 0)
        for pid, trait in only(services._RPTrait.objects.all(), "resourceprovider_id").values_list(
                "resourceprovider_id", "trait__name"):
            if pid in fresh:
                fresh[pid].traits.add(trait)
        for pid, agg in only(services._RPAggregate.objects.all(), "resourceprovider_id").values_list(
                "resourceprovider_id", "placementaggregate__uuid"):
            if pid in fresh:
                fresh[pid].aggregates.add(agg)
        self._logged(None if ids is None else {pid: self._providers.get(pid) for pid in ids})
        if ids is None:
            self._providers = fresh
        else:
            for pid in ids:
                self._providers.pop(pid, None)
            self._providers.update(fresh)
        self._order = sorted(self._providers)
        self._classes.update(rc for rp in fresh.values() for rc in rp.inventories)
        if ids is None:
            keep_out_of_collections(len(self._providers))

    def _logged(self, replaced: dict[int, _Provider | None] | None) -> None:
        """A new generation of the copy, logged with the providers it replaced (``{id: the
        provider before, None: not loaded}``; None: too many or all, not told)."""
        self._generation += 1
        self._changes[self._generation] = None if replaced is None or len(replaced) > INCREMENTAL_MAX \
            else replaced
        self._changes.pop(self._generation - CHANGES_KEPT, None)

    # -- answers ------------------------------------------------------------------------------
    def allocation_candidates(
        self, *, resources: Mapping[str, int], required_traits: Iterable[str] = (),
        forbidden_traits: Iterable[str] = (), member_of: list[list[str]] | None = None, limit: int | None = None,
        provider_uuids: Iterable[str] | None = None, randomize: bool = False,
    ) -> AllocationCandidates:
        """What ``services.allocation_candidates`` answers for the same arguments (same errors:
        PlacementInvalid, ResourceClassNotFound, TraitNotFound), from the refreshed copy."""
        wanted = {rc: int(n) for rc, n in resources.items() if int(n) > 0}
        if not wanted:
            raise PlacementInvalid("Badly formed resources parameter. Expected resources query string parameter "
                                   "in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.")
        if not wanted.keys() <= self._classes:  # unknown classes are an error, not "no candidates"
            services._resource_class_ids(wanted)
        required, forbidden = set(required_traits), set(forbidden_traits)
        if required or forbidden:
            services._trait_ids_known(sorted(required | forbidden))
        groups = [set(any_of) for any_of in member_of or []]
        only = set(provider_uuids) if provider_uuids is not None else None
        checks = sorted(wanted.items())
        with self._lock:
            self._refresh()
            found: list[_Provider] = []
            for pid in self._order:
                rp = self._providers[pid]
                if only is not None and rp.uuid not in only:
                    continue
                if not rp.can_take(checks):
                    continue
                if (required and not required <= rp.traits) or (forbidden and forbidden & rp.traits):
                    continue
                if groups and not all(group & rp.aggregates for group in groups):
                    continue
                found.append(rp)
                if limit and not randomize and len(found) >= limit:
                    break
            if randomize:
                found = random.sample(found, min(limit, len(found)) if limit else len(found))
            summaries = {rp.uuid: rp.summary() for rp in found}
        requests = [{"allocations": {rp.uuid: {"resources": dict(wanted)}}} for rp in found]
        return AllocationCandidates(requests, summaries)


    def shortfall(
        self, *, resources: Mapping[str, int], required_traits: Iterable[str] = (),
        forbidden_traits: Iterable[str] = (), member_of: list[list[str]] | None = None,
        provider_uuids: Iterable[str] | None = None, nearest: int = 20, refresh: bool = True, copied: bool = True,
    ) -> dict[str, Any]:
        """Why providers cannot take ``resources`` (the arguments of ``allocation_candidates``):
        ``providers`` looked at; per resource class the amount ``requested``, how many providers
        are ``short_on`` it and the ``most_free`` on a provider that is not otherwise excluded
        (traits, aggregates; on any provider when all are); per trait how many providers lack a
        required one / have a forbidden one; how many are ``outside_aggregates``; and the
        ``nearest`` providers (fewest problems first, then smallest shortage) with what each lacks.

        Refreshes the copy first (one statement when nothing changed), unless ``refresh`` is
        False: the caller has just refreshed it (its allocation candidates of the same request,
        whose answer the shortfall explains). The answer is kept, as
        counts, for the last ``SHORTFALLS_KEPT`` questions: while placement does not change it is
        given again as it is (a full cloud; PENDING servers retried); when placement changed, only
        the providers reloaded since are taken out of the counts and put back in as they are now
        (``_Shortfall.update``), so a claim elsewhere in the cloud costs a look at one provider,
        not a walk of all of them. The caller gets its own copy of the answer (``shortfall_copy``);
        with ``copied=False`` the kept answer itself, the same object for as long as it holds:
        read it, do not change it."""
        wanted = {rc: int(n) for rc, n in resources.items() if int(n) > 0}
        checks = tuple(sorted(wanted.items()))
        required, forbidden = frozenset(required_traits), frozenset(forbidden_traits)
        groups = tuple(frozenset(any_of) for any_of in member_of or [])
        # the scope as given: a frozenset as it is (it keeps its hash, and the same set object
        # asked again is found by identity), anything else as a tuple (a tuple hashes and
        # compares ten times faster than a new set of it; the same uuids in another order are
        # only a miss)
        scope = provider_uuids if isinstance(provider_uuids, frozenset) \
            else tuple(provider_uuids) if provider_uuids is not None else None
        key = (checks, required, forbidden, groups, scope, nearest)
        with self._lock:
            if refresh or self._stamp is None:
                self._refresh()
            kept = self._shortfalls.pop(key, None)
            if kept is not None and kept.generation != self._generation:
                changed = self._changed_since(kept.generation)
                if changed is None or not kept.update(changed, self._providers, self._generation):
                    kept = None
            if kept is None:
                question = _Question(checks, required, forbidden, groups,
                                     frozenset(scope) if scope is not None else None, nearest)
                kept = _Shortfall.walk(question, [self._providers[pid] for pid in self._order], self._generation)
            self._shortfalls[key] = kept
            while len(self._shortfalls) > SHORTFALLS_KEPT:
                del self._shortfalls[next(iter(self._shortfalls))]
            answer = kept.answer(self._providers)
        return shortfall_copy(answer) if copied else answer

    def _changed_since(self, generation: int) -> dict[int, _Provider | None] | None:
        """``{provider id: the provider as it was at ``generation`` (None: not loaded then)}`` of
        the providers reloaded since; None when that is not known (a full reload since, or a
        generation older than the log) or too many changed."""
        if not 0 <= self._generation - generation <= CHANGES_KEPT:
            return None
        changed: dict[int, _Provider | None] = {}
        for later in range(generation + 1, self._generation + 1):
            replaced = self._changes.get(later)
            if replaced is None:
                return None
            for pid, old in replaced.items():
                changed.setdefault(pid, old)  # the oldest version is the one the answer counted
        return changed if len(changed) <= INCREMENTAL_MAX else None

    def summaries(self, uuids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Provider summaries (as in allocation candidates) of ``uuids`` known to the copy."""
        wanted = set(uuids)
        with self._lock:
            return {rp.uuid: rp.summary() for rp in self._providers.values() if rp.uuid in wanted}


def shortfall_copy(shortfall: dict[str, Any]) -> dict[str, Any]:
    """A copy of a kept ``shortfall`` answer that its reader may change (``copy.deepcopy`` costs
    ten times more with every provider named, as the dry run asks); the keys a near provider was
    given besides (its host) are copied as they are."""
    return {**shortfall, "resources": {rc: dict(facts) for rc, facts in shortfall["resources"].items()},
            "traits_missing": dict(shortfall["traits_missing"]),
            "traits_forbidden": dict(shortfall["traits_forbidden"]),
            "nearest": [{**near, "short": dict(near["short"]), "missing_traits": list(near["missing_traits"]),
                         "forbidden_traits": list(near["forbidden_traits"])} for near in shortfall["nearest"]]}


def keep_out_of_collections(size: int) -> None:
    """After loading a big long-lived copy, move every live object out of the cyclic garbage
    collector's generations (``gc.freeze``, after one full collection so that no garbage is
    pinned): otherwise each full collection walks the hundred thousand objects of the copy
    again, which measured as a third of a request's time at 10,000 providers. Small copies
    (tests, small clouds) are left alone."""
    if size >= FREEZE_AT:
        gc.collect()
        gc.freeze()


provider_cache = ProviderCache()
