"""Tool modules, one per tool, listed statically by each layer's ``MODULES``."""
