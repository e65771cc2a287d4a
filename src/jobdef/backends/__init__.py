"""Job storage backends: the :class:`~jobdef.backends.base.Backend` protocol and its engines.

``open_backend(url)`` picks the engine from the URL scheme: ``sqlite:///path.db``
(the embedded default) or ``postgresql://...``.
"""
