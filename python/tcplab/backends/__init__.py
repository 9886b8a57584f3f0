"""Backends run a resolved spec and stream records into a results folder."""
