"""Experiment specs: load TOML, apply overrides, validate, resolve into the simulator's config."""

from .schema import SpecError, load_spec, resolve

__all__ = ["SpecError", "load_spec", "resolve"]
