"""Scheduling services: host aggregates and availability zones (``aggregates``)."""
