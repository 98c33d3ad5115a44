"""The HTTP routes: thin functions that parse parameters (:mod:`.params`), call one function of the
registry or of :mod:`tb_plugin.registry.report`, and answer ``(status, document)`` (an error raised as a
:class:`~tb_plugin.errors.KinetoscopeError` is answered by ``routes.route``); :mod:`.paging`
pages tables and writes CSV. ``plugin.py`` maps each route to a URL."""

from .routes import *  # noqa: F403 - the route functions, looked up by plugin.py at start-up
from .routes import __all__ as _routes
from .routes_hang import *  # noqa: F403 - the Hang view's routes
from .routes_hang import __all__ as _hang_routes

__all__ = [*_routes, *_hang_routes]
