"""Experiment specs: load TOML, apply overrides, validate, resolve into the simulator's config."""

from .schema import Resolved, SpecError, load_spec, resolve

__all__ = ["Resolved", "SpecError", "load_spec", "resolve"]
