"""Compute host services."""
