"""Placement: resource providers, inventories, traits, aggregates, allocations and allocation
candidates, all in the API database. ``services`` is the entry point."""
