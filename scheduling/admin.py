"""Django admin for scheduling: placement and host aggregates, read-only (writes go through the
placement API, os-aggregates or the services, which keep generations, zone rules and the
placement mirror consistent); request specs shown as stored."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Sum
from django.http import HttpRequest

from .models import Aggregate, Allocation, Consumer, Inventory, RequestSpec, ResourceProvider
from .placement.services import capacity


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class InventoryInline(admin.TabularInline):
    model = Inventory
    fields = ("resource_class", "total", "reserved", "allocation_ratio", "min_unit", "max_unit", "step_size",
              "capacity", "used")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="capacity")
    def capacity(self, obj: Inventory) -> int:
        return capacity(obj.total, obj.reserved, obj.allocation_ratio)

    @admin.display(description="used")
    def used(self, obj: Inventory) -> int:
        return Allocation.objects.filter(resource_provider_id=obj.resource_provider_id,
                                         resource_class_id=obj.resource_class_id).aggregate(n=Sum("used"))["n"] or 0


@admin.register(ResourceProvider)
class ResourceProviderAdmin(ReadOnlyAdmin):
    list_display = ("name", "uuid", "generation", "parent", "created_at")
    search_fields = ("name", "uuid")
    inlines = [InventoryInline]
    filter_horizontal = ("traits", "aggregates")


@admin.register(Consumer)
class ConsumerAdmin(ReadOnlyAdmin):
    list_display = ("uuid", "consumer_type", "project_id", "user_id", "generation", "created_at")
    search_fields = ("uuid", "project_id", "user_id")
    list_filter = ("consumer_type",)


@admin.register(Allocation)
class AllocationAdmin(ReadOnlyAdmin):
    list_display = ("consumer", "resource_provider", "resource_class", "used")
    search_fields = ("consumer__uuid", "resource_provider__name", "resource_provider__uuid")
    list_select_related = ("consumer", "resource_provider", "resource_class")


@admin.register(Aggregate)
class AggregateAdmin(ReadOnlyAdmin):
    list_display = ("name", "uuid", "zone", "host_names", "deleted")
    search_fields = ("name", "uuid", "hosts__host")
    list_filter = ("deleted",)

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).prefetch_related("hosts", "metadata")

    @admin.display(description="availability zone")
    def zone(self, obj: Aggregate) -> str:
        return next((m.value for m in obj.metadata.all() if m.key == "availability_zone"), "")

    @admin.display(description="hosts")
    def host_names(self, obj: Aggregate) -> str:
        return ", ".join(sorted(h.host for h in obj.hosts.all()))


@admin.register(RequestSpec)
class RequestSpecAdmin(ReadOnlyAdmin):
    list_display = ("instance_uuid", "created_at", "updated_at")
    search_fields = ("instance_uuid",)
