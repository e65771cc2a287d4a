"""Handlers of the example sheets in ``jobdefs/``, used by ``jobdef demo``."""
