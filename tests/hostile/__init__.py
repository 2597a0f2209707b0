"""Hostile inputs from the security reviews, across packages, each refused clearly."""
